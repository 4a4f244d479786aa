"""Fitting a result into the output budget without losing the way back to what was cut.

Long messages are shortened (marked `[…]`, cut at a word or line boundary with no code fence left open;
around the part that matched, in a search); a listing or a page that is still too long shows fewer
chats or messages. Whatever is cut is named in a note with the exact call that gets it back, and the
call for the next page repeats every argument given, so the model never has to guess. Each `fit_*`
takes a `render` callback and measures the real text, notes included. Searches share their budget in
`tools.search_budget`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from storage.reads.results import ChatHit, ChatPage, RecentResult, ShownMessage, WrittenWithin
from tools.outputs import ReadOutput, RecentOutput
from tools.render import quoted
from tools.voice import call

CUT = "[…]"
MIN_CAP = 80
MAX_HINTS = 5
# A message on a page keeps at least this many characters before the page shows fewer messages
# (12,000 characters hold about 38 of them), and the room its `#12 user (date):` line takes besides.
PAGE_FLOOR = 250
LINE_ROOM = 45


class Focus:
    """Words to keep in view when a long message is cut, most wanted first: `search` finds the first
    word of the list that the text holds, not whichever word comes first in it ("offsite" in section 7 of
    a policy, not "keep" in section 1)."""

    def __init__(self, words: Sequence[str]):
        self.words = list(dict.fromkeys(words))
        self.patterns = [re.compile(re.escape(word), re.IGNORECASE) for word in self.words]

    def search(self, text: str) -> re.Match[str] | None:
        for pattern in self.patterns:
            if found := pattern.search(text):
                return found
        return None


def focus_pattern(query: str) -> Focus | None:
    """The query's words, longest first, to keep the matched part of a long message in view."""
    words = {w for w in re.findall(r"\w+", query) if len(w) >= 3}
    if not words:
        return None
    return Focus(sorted(words, key=lambda w: (-len(w), w))[:20])


_SPELLED_AS = re.compile(r"^(\S+) \(as (\S+)\)$")


def hit_focus(hit: ChatHit, fallback: Focus | None) -> Focus | None:
    """The words a search found in this chat, rarest first (its evidence; a word held in another form by
    that form, none held only by the title), then the query's."""
    if hit.evidence is None or not hit.evidence.matched:
        return fallback
    words = []
    for named in hit.evidence.matched:
        if named.endswith("(in the title)"):
            continue
        spelled = _SPELLED_AS.match(named)
        words.append(spelled.group(2) if spelled else named)
    words = [w for w in words if len(w) >= 3]
    if not words:
        return fallback
    return Focus(words + (fallback.words if fallback else []))


# A line that opens or closes a Markdown code fence.
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
# How far a cut may move to reach a line break, or a space, rather than split a word.
SNAP = 80


def clip(text: str, limit: int, focus: Focus | None = None) -> tuple[str, bool]:
    """At most about `limit` characters of `text`, centred a little before the first focus hit. The cut
    starts and ends at a line break or a space where one is near (never inside a word that has one
    nearby), and leaves no code fence open: a cut inside code opens and closes the fence again."""
    if len(text) <= limit:
        return text, False
    start = 0
    hit = focus.search(text) if focus is not None else None
    if hit is not None:
        start = max(0, hit.start() - limit // 3)
    end = min(len(text), start + limit)
    start = max(0, end - limit)
    if start:
        start = _snap_start(text, start, end)
    if end < len(text):
        end = _snap_end(text, start, end)
    body = text[start:end].strip("\n")
    reopened = len(_FENCE.findall(text, 0, start)) % 2 == 1
    if reopened and _FENCE.match(body):  # the cut starts at the fence that closes the code: leave it out
        body = body.partition("\n")[2]
        reopened = False
    if reopened:
        body = "```\n" + body
    if len(_FENCE.findall(body)) % 2 == 1:
        body += "\n```"
    head = f"{CUT}\n" if start and reopened else f"{CUT} " if start else ""
    tail = f"\n{CUT}" if end < len(text) and body.endswith("```") else f" {CUT}" if end < len(text) else ""
    return head + body.strip(" ") + tail, True


def _snap_start(text: str, start: int, end: int) -> int:
    """`start` moved forward to the next line, or word, when one begins within reach."""
    reach = min(start + SNAP, end - 1)
    line = text.find("\n", start - 1, reach)
    if line != -1:
        return line + 1
    space = next((i for i in range(start - 1, reach) if text[i].isspace()), None)
    return start if space is None else space + 1


def _snap_end(text: str, start: int, end: int) -> int:
    """`end` moved back to the end of a line, or of a word, when one ends within reach."""
    floor = max(end - SNAP, start + 1)
    line = text.rfind("\n", floor, end + 1)
    if line != -1:
        return line
    space = next((i for i in range(end, floor - 1, -1) if text[i].isspace()), None)
    return end if space is None else space


def clip_message(message: ShownMessage, limit: int, focus: Focus | None) -> ShownMessage:
    text, cut = clip(message.text, limit, focus if message.matched else None)
    return message.model_copy(update={"text": text, "truncated": True}) if cut else message


def clip_hit(hit: ChatHit, cap: int, focus: Focus | None, keep: int | None = None, answers: bool = False) -> ChatHit:
    """The hit's first `keep` matches (all by default), long messages clipped to `cap` (half of it around
    a match; with `answers`, the assistant's messages keep the whole `cap` too: a search shows a question
    for its answer). A match with nothing to clip is kept as it is: copying models was a search's main
    fitting cost, done for every level tried."""
    matches = []
    for match in hit.matches[:keep]:
        messages = [
            clip_message(m, cap if m.matched or (answers and m.role == "assistant") else cap // 2, focus)
            for m in match.messages
        ]
        unchanged = all(new is old for new, old in zip(messages, match.messages, strict=True))
        matches.append(match if unchanged else match.model_copy(update={"messages": messages}))
    return hit.model_copy(update={"matches": matches})


def hint_list(hints: Sequence[str]) -> str:
    shown = "; ".join(hints[:MAX_HINTS])
    return shown + (f"; and {len(hints) - MAX_HINTS} more" if len(hints) > MAX_HINTS else "")


def shortened_hints(hits: Sequence[ChatHit]) -> list[str]:
    """One read_chat hint per chat with a shortened message, centred on the first such message."""
    hints = []
    for hit in hits:
        cut = next((m for match in hit.matches for m in match.messages if m.truncated), None)
        if cut is not None:
            hints.append(f"{quoted(hit.title)}: {call('read_chat', uri=hit.uri, around=cut.number)}")
    return hints


@dataclass(frozen=True)
class RecentCall:
    """What a recent_chats call asked for: the call for the next page keeps all of it."""

    n: int
    sort_order: Literal["asc", "desc"] = "desc"
    before: datetime | None = None
    after: datetime | None = None
    project: str | None = None

    def older(self, before: datetime) -> str:
        return call("recent_chats", n=self.n, project=self.project, before=before, after=self.after)

    def newer(self, after: datetime) -> str:
        return call("recent_chats", n=self.n, sort_order="asc", project=self.project, after=after, before=self.before)


def _page_hints(output: RecentOutput, asked: RecentCall) -> list[str]:
    """The next page, the way this one went, under the same filters: no chat skipped or shown twice.
    (The other way holds nothing: a page is the first chats past its bound.)"""
    if output.sort_order == "desc" and output.next_before is not None:
        return [f"Older chats: {asked.older(output.next_before)}."]
    if output.sort_order == "asc" and output.next_after is not None:
        return [f"Newer chats: {asked.newer(output.next_after)}."]
    return []


def fit_recent(
    result: RecentResult,
    budget: int,
    render: Callable[[RecentOutput], str],
    asked: RecentCall,
    today: date,
    newest: datetime | None = None,
) -> tuple[RecentOutput, str]:
    chats = list(result.chats)
    cap = max(MIN_CAP, min(400, budget // (max(1, len(chats)) * 3)))
    boundary: dict[str, object] = {}
    while True:
        shown = [clip_hit(hit, cap, None) for hit in chats]
        output = RecentOutput(
            chats=shown,
            sort_order=result.sort_order,
            next_before=result.next_before,
            next_after=result.next_after,
            truncated=bool(boundary) or bool(shortened_hints(shown)),
            today=today,
            newest_chat_at=newest,
        )
        output = output.model_copy(update=boundary)
        notes = [*(_within_line(chat) for chat in result.within), *result.notes]
        if boundary:
            notes.append("Fewer chats than asked were shown, to fit the size budget.")
        if shortened := shortened_hints(shown):
            notes.append(f"Messages marked {CUT} were shortened; read them in full: {hint_list(shortened)}.")
        output.notes = notes + _page_hints(output, asked)
        text = render(output)
        if len(text) <= budget:
            return output, text
        # Drop a whole group of chats sharing the last updated_at: a page never splits a tie,
        # otherwise a strict before/after would skip the rest of the group.
        tail = chats[-1].updated_at
        keep = [hit for hit in chats if hit.updated_at != tail]
        if keep:
            chats = keep
            key = "next_before" if result.sort_order == "desc" else "next_after"
            boundary = {key: chats[-1].updated_at}
        elif cap > MIN_CAP:
            cap //= 2
        else:
            return output, text


def fit_page(
    page: ChatPage,
    budget: int,
    limit: int,
    render: Callable[[ReadOutput], str],
    earlier: Callable[[int], tuple[int, int]] | None = None,
) -> tuple[ReadOutput, str]:
    """The page within `budget`: a page too long first shortens its long messages to a fair share each
    (at least `PAGE_FLOOR`), then shows fewer messages (the end goes first, or the end farther from
    the message it is centred on). The calls it offers read the adjacent pages: the later
    one from the first message not shown, the earlier one (`earlier`: its offset and limit for a page
    that ends just before a given message and is shown whole) up to the first message shown."""
    messages = list(page.messages)
    offset, next_offset = page.offset, page.next_offset
    cap = max(MIN_CAP, budget - 600)
    cut_ends = False
    uri = page.chat.uri
    while True:
        shown = [clip_message(m, cap, None) for m in messages]
        notes: list[str] = []
        if any(m.truncated for m in shown):
            notes.append(f"Messages marked {CUT} were too long for the size budget and were shortened.")
        if cut_ends:
            notes.append("Fewer messages than asked were shown, to fit the size budget.")
        if offset > 0:
            start, count = earlier(offset) if earlier is not None else (max(0, offset - limit), min(limit, offset))
            notes.append(f"Earlier messages: {call('read_chat', uri=uri, offset=start, limit=count)}.")
        if next_offset is not None:
            notes.append(f"Later messages: {call('read_chat', uri=uri, offset=next_offset, limit=limit)}.")
        output = ReadOutput(
            chat=page.chat,
            messages=shown,
            offset=offset,
            next_offset=next_offset,
            truncated=cut_ends or any(m.truncated for m in shown),
            notes=notes,
        )
        text = render(output)
        if len(text) <= budget:
            return output, text
        # Long messages share the page before any is left out: a page of whole messages that held only
        # one or two would make paging through a chat of long messages take a call per message.
        fair = max(PAGE_FLOOR, (budget - 600) // len(messages) - LINE_ROOM)
        if cap > fair:
            cap = fair
            continue
        if len(messages) > 1:
            cut_ends = True
            target = next((i for i, m in enumerate(messages) if m.matched), None)
            if target is not None and target >= len(messages) - 1 - target:
                messages.pop(0)
                offset = messages[0].index
            else:
                next_offset = messages.pop().index
        elif cap > MIN_CAP:
            cap //= 2
        else:
            return output, text


def whole_page_before(
    before: ChatPage, first: int, budget: int, render: Callable[[ReadOutput], str]
) -> tuple[int, int]:
    """(offset, limit) of the longest page that ends just before message `first`, within `before` (the
    messages up to it), and is shown whole within `budget`: paging back loses no message."""
    messages = list(before.messages)
    while len(messages) > 1:
        start = messages[0].index
        probe = before.model_copy(update={"messages": messages, "offset": start, "next_offset": first})
        # the earlier call the page will offer is no longer than one naming its own offset and length
        bound = (start, len(messages))
        output, _ = fit_page(probe, budget, len(messages), render, _always(bound))
        if len(output.messages) == len(messages):
            break
        messages = messages[-min(len(output.messages), len(messages) - 1) :]
    return (messages[0].index, len(messages)) if messages else (max(0, first - 1), 1)


def _always(value: tuple[int, int]) -> Callable[[int], tuple[int, int]]:
    return lambda _: value


def _within_line(chat: WrittenWithin) -> str:
    """A chat last updated after the window that holds messages written in it, and the call reading them."""
    first, last, count = chat.numbers[0], chat.numbers[-1], len(chat.numbers)
    numbers = f"#{first}" if count == 1 else f"#{first}-{last}"
    return (
        f"{chat.title!r} (last updated {chat.updated}, so not in this list) has {count} "
        f"message{'' if count == 1 else 's'} written in this window, {numbers}: "
        + call("read_chat", uri=chat.uri, around=first)
    )
