"""Time recall: pages of chats by `updated_at`, and the preview shown for each."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

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


def preview_spans(message_count: int) -> list[tuple[int, int]]:
    """Which messages stand for a chat in a listing: its opening exchange and, if longer, its last turns."""
    if message_count == 0:
        return []
    if message_count <= PREVIEW_HEAD + PREVIEW_TAIL:
        return [(0, message_count - 1)]
    return [(0, PREVIEW_HEAD - 1), (message_count - PREVIEW_TAIL, message_count - 1)]


def preview(spans: list[tuple[int, int]], messages: list[Message]) -> list[Match]:
    by_index = {m.index: m for m in messages}
    return [
        Match(
            message_ids=[],
            first_index=first,
            last_index=last,
            messages=[shown(by_index[i], set()) for i in range(first, last + 1) if i in by_index],
        )
        for first, last in spans
    ]
