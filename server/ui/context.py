"""What every page is rendered with: the settings, the opened store, the token's form secret, and the
request's query read into plain values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from storage.errors import PastchatsError
from storage.times import parse_iso

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.library import Library


class BadInput(PastchatsError):
    """A query value the page cannot use; the message is shown on the page."""


@dataclass
class Context:
    settings: Settings
    library: Library
    csrf: str  # the value store-changing forms send back (`server.ui.guard.csrf_token`)


def text(params: dict[str, str], name: str) -> str | None:
    value = " ".join(params.get(name, "").split())
    return value or None


def number(params: dict[str, str], name: str, default: int = 0) -> int:
    value = params.get(name, "").strip()
    return int(value) if value.isdigit() else default


def day(params: dict[str, str], name: str) -> datetime | None:
    """A date field (`2025-01-20`, midnight UTC, as the CLI's `--after`/`--before` read it; or an ISO time)."""
    value = params.get(name, "").strip()
    if not value:
        return None
    parsed = parse_iso(value)
    if parsed is None:
        raise BadInput(f"{name}: {value!r} is not a date; give one as 2025-01-20")
    return parsed


def stored_source(sources: list[str], source: str | None) -> str | None:
    """The source as stored, matched case-insensitively as the CLI matches it; one that names none
    fails with the ones there are (never an empty answer)."""
    if source is None:
        return None
    for name in sources:
        if name.casefold() == source.casefold():
            return name
    raise BadInput(f"no chat comes from the source {source!r}; known: {', '.join(sources)}")
