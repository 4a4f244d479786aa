"""What the recent_chats tool answers, without MCP: shared by the server (`tools.recent_chats`) and
`pastchats recent`, which runs it without importing the MCP SDK (start-up speed)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from tools.arguments import blank_to_none, window
from tools.budget import fit_recent
from tools.errors import require_chats
from tools.outputs import RecentOutput
from tools.render import chat_block, document

if TYPE_CHECKING:
    from storage.recent import RecentSource

NAME = "recent_chats"


def render(output: RecentOutput) -> str:
    if not output.chats:
        lead = (
            "No chats in that time window (when paging: this was the last page). Widen it, or drop the project filter."
        )
        return document([lead], output.notes)
    blocks = [chat_block(hit, [m.messages for m in hit.matches]) for hit in output.chats]
    return document(blocks, output.notes)


def recent(
    library: RecentSource,
    *,
    n: int = 3,
    sort_order: Literal["asc", "desc"] = "desc",
    before: datetime | None = None,
    after: datetime | None = None,
    project: str | None = None,
    budget: int = 12_000,
) -> tuple[RecentOutput, str]:
    """The tool's whole behaviour, without MCP: shared by the server and the CLI."""
    after, before = window(after, before)
    project = blank_to_none(project)
    result = library.recent(n=n, sort_order=sort_order, before=before, after=after, project=project)
    if not result.chats:
        require_chats(library)
    return fit_recent(result, budget, render)
