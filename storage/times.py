"""Time, the one way pastchats handles it: aware UTC in memory, naive UTC on disk, `Z` in text.

Every layer converts through these helpers; none writes its own `replace(tzinfo=...)`.

What can be stored is bounded: Tantivy holds dates as nanoseconds since 1970 (1677-09-21 to
2262-04-11), so a chat's times must fall in [EARLIEST, LATEST). Importers report or drop times outside
it, the models refuse them, and search filters are clamped to it (a bound beyond it excludes nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime

TYPE_CHECKING = False  # not typing's: importing `typing` costs the lean CLI commands ~5 ms of start-up
if TYPE_CHECKING:  # the overloads are for the type checker only (each block holds only overloads)
    from typing import overload

if TYPE_CHECKING:

    @overload
    def utc(value: datetime) -> datetime: ...
    @overload
    def utc(value: None) -> None: ...


def utc(value: datetime | None) -> datetime | None:
    """The same instant, aware, in UTC. A naive value is taken to be UTC already: that is how LanceDB
    and Tantivy hand times back, and importers convert local times before they get here."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # Within a day of year 1 or 9999, an offset can push the instant past what datetime holds;
        # the nearest value it can hold is the honest answer (and is out of the storable range anyway).
        return (datetime.min if value.year < 5000 else datetime.max).replace(tzinfo=UTC)


EARLIEST = datetime(1678, 1, 1, tzinfo=UTC)
LATEST = datetime(2262, 1, 1, tzinfo=UTC)
RANGE = f"{EARLIEST.year}-{LATEST.year - 1}"


def storable(value: datetime) -> bool:
    """Whether the indexes can hold this time."""
    return EARLIEST <= utc(value) < LATEST


def clamp(value: datetime) -> datetime:
    """The storable time nearest to `value`: for filter bounds, where that changes no answer."""
    return min(max(utc(value), EARLIEST), LATEST)


def require_storable(value: datetime) -> datetime:
    """The value in UTC; ValueError (naming the range) when the indexes cannot hold it."""
    value = utc(value)
    if not storable(value):
        raise ValueError(f"{iso_z(value)} is out of range (times must fall in {RANGE})")
    return value


def storable_or_none(value: datetime | None) -> datetime | None:
    """The value in UTC, or None when the indexes cannot hold it (an optional time is then unknown)."""
    return None if value is None or not storable(value) else utc(value)


if TYPE_CHECKING:

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
