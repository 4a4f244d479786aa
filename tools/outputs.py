"""The tools' structured output: the storage result models, plus what the size budget did to them.

The text a tool returns is rendered from exactly these objects, so both always say the same thing.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from storage.results import ChatPage, RecentResult, SearchResult


def _truncated() -> Any:
    return Field(
        default=False,
        description="True when the result was cut to fit the size budget; notes say how to get the rest.",
    )


class SearchOutput(SearchResult):
    truncated: bool = _truncated()


class RecentOutput(RecentResult):
    truncated: bool = _truncated()


class ReadOutput(ChatPage):
    truncated: bool = _truncated()
    notes: list[str] = Field(default_factory=list)
