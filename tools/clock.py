"""Today and the newest chat: what a result says so that the model can turn "last week" into dates,
and see when an empty or weak result is empty because the store holds nothing that recent."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.reads.listing import RecentSource


def today() -> date:
    return datetime.now(UTC).date()


def newest_update(library: RecentSource, project: str | None) -> datetime | None:
    """When the newest chat (in `project`, if given) was last updated; None for an empty store."""
    chats = library.recent(n=1, project=project).chats
    return chats[0].updated_at if chats else None


def today_line(day: date) -> str:
    return f"Today is {day.isoformat()} (UTC)."


def newest_line(newest: datetime | None) -> str:
    """` The newest chat was last updated 2025-10-12.` (with its leading space), or nothing."""
    return "" if newest is None else f" The newest chat was last updated {newest.astimezone(UTC).date().isoformat()}."
