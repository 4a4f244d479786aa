"""Time, the one way pastchats handles it: aware UTC in memory, naive UTC on disk, `Z` in text.

Every layer converts through these helpers; none writes its own `replace(tzinfo=...)`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def utc(value: datetime) -> datetime: ...
@overload
def utc(value: None) -> None: ...
def utc(value: datetime | None) -> datetime | None:
    """The same instant, aware, in UTC. A naive value is taken to be UTC already: that is how LanceDB
    and Tantivy hand times back, and importers convert local times before they get here."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@overload
def naive_utc(value: datetime) -> datetime: ...
@overload
def naive_utc(value: None) -> None: ...
def naive_utc(value: datetime | None) -> datetime | None:
    """UTC without a zone, as LanceDB and Tantivy store it."""
    return None if value is None else utc(value).replace(tzinfo=None)


def parse_iso(text: str) -> datetime | None:
    """An aware UTC datetime from ISO 8601 (`2025-01-20`, `2025-01-20T10:00Z`, with any offset);
    naive values are UTC. None when the text is not ISO 8601."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def iso_z(value: datetime) -> str:
    """UTC with a `Z`, to the second unless the value has sub-seconds (so a page boundary round-trips)."""
    value = utc(value)
    spec = "seconds" if value.microsecond == 0 else "microseconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
