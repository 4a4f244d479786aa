"""Fitting a result into the output budget without losing the way back to what was cut.

Long messages are shortened (marked `[…]`; around the part that matched, in a search); a listing or a
page that is still too long shows fewer chats or messages. Whatever is cut is named in a note with the
exact call that gets it back, so the model never has to guess. Each `fit_*` takes a `render` callback
and measures the real text, notes included. Searches share their budget in `tools.search_budget`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from storage.results import ChatHit, ChatPage, RecentResult, ShownMessage
from storage.times import iso_z
from tools.outputs import ReadOutput, RecentOutput
from tools.render import quoted

CUT = "[…]"
MIN_CAP = 80
MAX_HINTS = 5


def focus_pattern(query: str) -> re.Pattern[str] | None:
    """The query's words, to keep the matched part of a long message in view."""
    words = {w for w in re.findall(r"\w+", query) if len(w) >= 3}
    if not words:
        return None
    ordered = sorted(words, key=len, reverse=True)[:20]
    return re.compile("|".join(re.escape(w) for w in ordered), re.IGNORECASE)


def clip(text: str, limit: int, focus: re.Pattern[str] | None = None) -> tuple[str, bool]:
    """At most about `limit` characters of `text`, centred a little before the first focus hit."""
    if len(text) <= limit:
        return text, False
    start = 0
    hit = focus.search(text) if focus is not None else None
    if hit is not None:
        start = max(0, hit.start() - limit // 3)
    end = min(len(text), start + limit)
    start = max(0, end - limit)
    body = text[start:end].strip()
    return (f"{CUT} " if start else "") + body + (f" {CUT}" if end < len(text) else ""), True


def clip_message(message: ShownMessage, limit: int, focus: re.Pattern[str] | None) -> ShownMessage:
    text, cut = clip(message.text, limit, focus if message.matched else None)
    return message.model_copy(update={"text": text, "truncated": True}) if cut else message


def clip_hit(hit: ChatHit, cap: int, focus: re.Pattern[str] | None, keep: int | None = None) -> ChatHit:
    """The hit's first `keep` matches (all by default), long messages clipped to `cap` (half of it around
    a match). A match with nothing to clip is kept as it is: copying models was a search's main fitting
    cost, done for every level tried."""
    matches = []
    for match in hit.matches[:keep]:
        messages = [clip_message(m, cap if m.matched else cap // 2, focus) for m in match.messages]
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
            hints.append(f"{quoted(hit.title)}: read_chat(uri={quoted(hit.uri)}, around={cut.number})")
    return hints


def _page_hints(output: RecentOutput) -> list[str]:
    if output.sort_order == "desc" and output.next_before is not None:
        return [f"Older chats: recent_chats(before={quoted(iso_z(output.next_before))})."]
    if output.sort_order == "asc" and output.next_after is not None:
        return [f"Newer chats: recent_chats(sort_order='asc', after={quoted(iso_z(output.next_after))})."]
    return []


def fit_recent(result: RecentResult, budget: int, render: Callable[[RecentOutput], str]) -> tuple[RecentOutput, str]:
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
        )
        output = output.model_copy(update=boundary)
        notes = list(result.notes)
        if boundary:
            notes.append("Fewer chats than asked were shown, to fit the size budget.")
        if shortened := shortened_hints(shown):
            notes.append(f"Messages marked {CUT} were shortened; read them in full: {hint_list(shortened)}.")
        output.notes = notes + _page_hints(output)
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


def fit_page(page: ChatPage, budget: int, limit: int, render: Callable[[ReadOutput], str]) -> tuple[ReadOutput, str]:
    messages = list(page.messages)
    offset, next_offset = page.offset, page.next_offset
    cap = max(MIN_CAP, budget - 600)
    cut_ends = False
    uri = quoted(page.chat.uri)
    while True:
        shown = [clip_message(m, cap, None) for m in messages]
        notes: list[str] = []
        if any(m.truncated for m in shown):
            notes.append(f"Messages marked {CUT} were too long for the size budget and were shortened.")
        if cut_ends:
            notes.append("Fewer messages than asked were shown, to fit the size budget.")
        if offset > 0:
            notes.append(f"Earlier messages: read_chat(uri={uri}, offset={max(0, offset - limit)}).")
        if next_offset is not None:
            notes.append(f"Later messages: read_chat(uri={uri}, offset={next_offset}).")
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
