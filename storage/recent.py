"""Time recall: pages of chats by `updated_at`, and the preview shown for each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal

from storage.lance_store import ConversationMeta
from storage.models import Message
from storage.results import Match
from storage.search import shown

PREVIEW_HEAD = 2  # the opening exchange says what a chat was about
PREVIEW_TAIL = 2  # the last turns say where it ended


def page_by_time(
    timeline: list[tuple[datetime, str]], n: int, sort_order: Literal["asc", "desc"]
) -> tuple[list[tuple[datetime, str]], bool]:
    """The first `n` entries in time order, extended so that no group of equal times is split.

    Returns the page and whether anything is left after it.
    """
    ordered = sorted(timeline, reverse=sort_order == "desc")
    if len(ordered) <= n:
        return ordered, False
    end = n
    while end < len(ordered) and ordered[end][0] == ordered[n - 1][0]:
        end += 1
    return ordered[:end], end < len(ordered)


def preview(meta: ConversationMeta, read: Callable[[str, int, int], list[Message]]) -> list[Match]:
    count = meta.message_count
    if count == 0:
        return []
    spans = [(0, min(PREVIEW_HEAD, count) - 1)]
    if count > PREVIEW_HEAD + PREVIEW_TAIL:
        spans.append((count - PREVIEW_TAIL, count - 1))
    elif count > PREVIEW_HEAD:
        spans = [(0, count - 1)]
    messages = {m.index: m for m in read(meta.id, spans[0][0], spans[-1][1])} if len(spans) == 1 else {}
    if len(spans) > 1:
        for first, last in spans:
            messages.update({m.index: m for m in read(meta.id, first, last)})
    return [
        Match(
            message_ids=[],
            first_index=first,
            last_index=last,
            messages=[shown(messages[i], set()) for i in range(first, last + 1) if i in messages],
        )
        for first, last in spans
    ]
