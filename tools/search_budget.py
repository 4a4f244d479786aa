"""Sharing the output budget among the chats of a search: the room goes to the chats that answer.

Each weak chat is listed in one line (what names it, where its best match is, why it is weak), and the
strong ones share a focused result: `STRONG_ROOM` characters for each, beside the weak chats' lines and
`NOTES_ROOM` for the notes (one strong chat and four weak ones: under 5,000 characters; no strong chat:
a line each, under 2,500). Text that may be unrelated is not worth the model's reading. Each shown
chat gets a fair part of the room: chats that need less than their part keep all of it and leave the
rest to the others. A chat is fitted to its part in steps (fewer of its matches, each kept with its
answer, then long messages cut around the part that matched, marked `[…]`), never by leaving it out:
max_results chats are listed whenever that many match. Only a budget too small for even one line per
message drops the lowest-ranked chats. Whatever is cut is named in a note with the exact call that
gets it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime

from storage.reads.results import ChatHit, SearchResult
from tools.budget import CUT, Focus, clip_hit, focus_pattern, hint_list, hit_focus, shortened_hints
from tools.outputs import SearchOutput
from tools.render import LineMemo, chat_block, chat_line, quoted
from tools.voice import call

# (matches kept, characters kept of a matched message and of an answer; the other messages around a
# match keep half as many), most wanted first: the best match whole with its answer before more matches cut.
LEVELS = [
    (3, 4000),
    (2, 4000),
    (1, 4000),
    (2, 1600),
    (1, 2000),
    (2, 1000),
    (1, 1000),
    (1, 700),
    (1, 450),
    (1, 300),
    (1, 200),
    (1, 120),
]
SEPARATOR = 2  # the blank line between blocks
STRONG_ROOM = 3_300  # the most each strong chat takes beside weak ones
NOTES_ROOM = 500  # and the notes


def fitted(hit: ChatHit, level: tuple[int, int], focus: Focus | None) -> ChatHit:
    keep, cap = level
    return clip_hit(hit, cap, hit_focus(hit, focus), keep, answers=True)


def block(hit: ChatHit, memo: LineMemo | None = None) -> str:
    return chat_block(hit, [m.messages for m in hit.matches], memo)


def share(
    hits: Sequence[ChatHit],
    usable: int,
    focus: Focus | None,
    fitted_cache: dict[tuple[int, int], tuple[ChatHit, int]] | None = None,
    memo: LineMemo | None = None,
) -> tuple[list[ChatHit], int]:
    """Each chat at the richest level that fits its fair part; smaller chats leave their rest to others.

    Returns the fitted chats and the size of their blocks. Levels are rendered only as far as needed
    (rendering all ten for every chat was most of a search's formatting time); `fitted_cache` keeps
    them across the calls of one `fit_search`, keyed by (chat position, level), and `memo` the lines of
    the messages the levels share.
    """
    cache = {} if fitted_cache is None else fitted_cache

    def variant(i: int, level: int) -> tuple[ChatHit, int]:
        if (i, level) not in cache:
            hit = fitted(hits[i], LEVELS[level], focus)
            cache[(i, level)] = hit, len(block(hit, memo)) + SEPARATOR
        return cache[(i, level)]

    chosen: dict[int, ChatHit] = {}
    remaining = usable
    order = sorted(range(len(hits)), key=lambda i: variant(i, 0)[1])
    for position, i in enumerate(order):
        allowance = remaining // (len(order) - position)
        pick = next((j for j in range(len(LEVELS)) if variant(i, j)[1] <= allowance), len(LEVELS) - 1)
        chosen[i], size = variant(i, pick)
        remaining -= size
    return [chosen[i] for i in range(len(hits))], usable - remaining


def _left_out(hit: ChatHit, shown: ChatHit) -> list[str]:
    """A read_chat call for each match of `hit` that the fitted `shown` left out."""
    return [
        f"{quoted(hit.title)}: {call('read_chat', uri=hit.uri, around=match.messages[0].number)}"
        for match in hit.matches[len(shown.matches) :]
        if match.messages
    ]


def listed(hit: ChatHit) -> ChatHit:
    """A weak chat as one line: its matches keep their place in the chat, not their messages."""
    return hit.model_copy(update={"matches": [m.model_copy(update={"messages": []}) for m in hit.matches]})


def _more_chats(result: SearchResult, shown: Sequence[ChatHit]) -> str | None:
    """The strong chats a result had no room for, each with the call that reads it."""
    unshown = result.matching_chats - sum(hit.strength == "strong" for hit in shown)
    if unshown <= 0 or not result.others:
        return None
    hints = [f"{quoted(o.title)}: {call('read_chat', uri=o.uri, around=o.number)}" for o in result.others]
    rest = unshown - len(hints)
    tail = f"; and {rest} more: use more specific words, or project/after/before" if rest > 0 else ""
    return f"Shown {len(shown)} of {result.matching_chats} matching chats; the others: {'; '.join(hints)}{tail}."


def fit_search(
    result: SearchResult,
    budget: int,
    render: Callable[[SearchOutput, LineMemo | None], str],
    today: date,
    newest: datetime | None = None,
) -> tuple[SearchOutput, str]:
    """The result fitted to `budget`, with `today` and, when given, the newest chat's time (a weak or
    empty result says it)."""
    focus = focus_pattern(result.query)
    strong = sum(hit.strength == "strong" for hit in result.chats)
    # strong chats first (the engine's order); the weak ones are listed in a line each
    hits = [hit if hit.strength == "strong" else listed(hit) for hit in result.chats]
    blocks = [i for i, hit in enumerate(hits) if hit.strength == "strong"]
    lines = sum(len(weak_line(hit)) + SEPARATOR for hit in hits if hit.strength != "strong")
    budget = min(budget, STRONG_ROOM * strong + lines + NOTES_ROOM)
    reserve = 600  # for the notes and the listed chats, measured and corrected below
    dropped: list[str] = []
    fitted_cache: dict[tuple[int, int], tuple[ChatHit, int]] = {}  # hits only ever lose their last one
    memo: LineMemo = {}  # the lines of each message rendered so far (its objects all live in the cache)
    while True:
        usable = budget - reserve
        fitted_blocks, size = share([hits[i] for i in blocks], usable, focus, fitted_cache, memo)
        shown = list(hits)
        for i, fit in zip(blocks, fitted_blocks, strict=True):
            shown[i] = fit
        left_out = [hint for i in blocks for hint in _left_out(hits[i], shown[i])]
        notes = list(result.notes)
        if not dropped and (more := _more_chats(result, shown)):
            notes.append(more)
        if left_out:
            notes.append(f"More matches: {hint_list(left_out)}.")
        if shortened := shortened_hints(shown):
            notes.append(f"Messages marked {CUT} were shortened; read them in full: {hint_list(shortened)}.")
        if dropped:
            notes.append(f"Left out to fit the size budget (lowest-ranked first): {hint_list(dropped)}.")
        output = SearchOutput(
            query=result.query,
            mode=result.mode,
            chats=shown,
            matching_chats=result.matching_chats,
            others=result.others,
            notes=notes,
            today=today,
            newest_chat_at=newest,
            truncated=bool(dropped or left_out or shortened),
        )
        text = render(output, memo)
        if len(text) <= budget:
            return output, text
        if size <= usable and reserve < budget:  # the notes and listed chats took more than was set aside
            reserve += len(text) - budget
            continue
        if len(hits) <= 1:
            return output, text
        last = hits.pop()
        blocks = [i for i in blocks if i < len(hits)]
        dropped.insert(0, f"{quoted(last.title)}: {call('read_chat', uri=last.uri)}")


def weak_line(hit: ChatHit) -> str:
    """A weak chat in one line, with the call that reads its best match."""
    first = next((m.first_index for m in hit.matches), None)
    return chat_line(hit, None if first is None else call("read_chat", uri=hit.uri, around=first + 1))
