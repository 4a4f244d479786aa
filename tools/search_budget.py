"""Sharing the output budget among the chats of a search, so that every requested chat is shown.

Each chat gets a fair part of the budget: chats that need less than their part keep all of it and
leave the rest to the others. A chat is fitted to its part in steps (fewer of its matches, then long
messages cut around the part that matched, marked `[…]`), never by leaving it out. Only a budget too
small for even one line per message drops the lowest-ranked chats. Whatever is cut is named in a note
with the exact call that gets it back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from storage.results import ChatHit, SearchResult
from tools.budget import CUT, clip_hit, focus_pattern, hint_list, shortened_hints
from tools.outputs import SearchOutput
from tools.render import LineMemo, chat_block, quoted

# (matches kept, characters kept of a matched message); messages around a match keep half as many.
LEVELS = [(3, 4000), (3, 2000), (2, 1600), (2, 1000), (1, 1000), (1, 700), (1, 450), (1, 300), (1, 200), (1, 120)]
SEPARATOR = 2  # the blank line between blocks


def fitted(hit: ChatHit, level: tuple[int, int], focus: re.Pattern[str] | None) -> ChatHit:
    keep, cap = level
    return clip_hit(hit, cap, focus, keep)


def block(hit: ChatHit, memo: LineMemo | None = None) -> str:
    return chat_block(hit, [m.messages for m in hit.matches], memo)


def share(
    hits: Sequence[ChatHit],
    usable: int,
    focus: re.Pattern[str] | None,
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
        f"{quoted(hit.title)}: read_chat(uri={quoted(hit.uri)}, around={match.messages[0].number})"
        for match in hit.matches[len(shown.matches) :]
        if match.messages
    ]


def _more_chats(result: SearchResult, shown: int, max_results: int) -> str | None:
    if result.matching_chats <= shown:
        return None
    more = (
        f"conversation_search(query={quoted(result.query)}, max_results=10)"
        if max_results < 10
        else "a more specific query"
    )
    return (
        f"Shown {shown} of {result.matching_chats} matching chats. For more: {more}, "
        "or narrow it with project/after/before."
    )


def fit_search(
    result: SearchResult,
    budget: int,
    render: Callable[[SearchOutput, LineMemo | None], str],
    max_results: int = 10,
) -> tuple[SearchOutput, str]:
    focus = focus_pattern(result.query)
    hits = list(result.chats)
    reserve = 600  # for the notes, measured and corrected below
    dropped: list[str] = []
    fitted_cache: dict[tuple[int, int], tuple[ChatHit, int]] = {}  # hits only ever lose their last one
    memo: LineMemo = {}  # the lines of each message rendered so far (its objects all live in the cache)
    while True:
        usable = budget - reserve
        shown, size = share(hits, usable, focus, fitted_cache, memo)
        left_out = [hint for hit, fit in zip(hits, shown, strict=True) for hint in _left_out(hit, fit)]
        notes = list(result.notes)
        if not dropped and (more := _more_chats(result, len(shown), max_results)):
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
            notes=notes,
            truncated=bool(dropped or left_out or shortened),
        )
        text = render(output, memo)
        if len(text) <= budget:
            return output, text
        if size <= usable and reserve < budget:  # the notes took more than was set aside for them
            reserve += len(text) - budget
            continue
        if len(hits) <= 1:
            return output, text
        last = hits.pop()
        dropped.insert(0, f"{quoted(last.title)}: read_chat(uri={quoted(last.uri)})")
