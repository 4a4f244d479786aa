"""What the read_chat tool answers, without MCP: shared by the server (`tools.read_chat`) and
`pastchats read`, which runs it without importing the MCP SDK (start-up speed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.arguments import ArgumentError, blank_to_none
from tools.budget import fit_page
from tools.outputs import ReadOutput
from tools.render import chat_block, document

if TYPE_CHECKING:
    from storage.library import Library

NAME = "read_chat"


def render(output: ReadOutput) -> str:
    return document([chat_block(output.chat, [output.messages])], output.notes)


def read(
    library: Library,
    uri: str,
    *,
    offset: int = 0,
    limit: int = 40,
    around: int | str | None = None,
    budget: int = 12_000,
) -> tuple[ReadOutput, str]:
    """The tool's whole behaviour, without MCP: shared by the server and the CLI."""
    uri = uri.strip()
    if not uri:
        raise ArgumentError(
            "uri is empty. Pass the uri of a chat, as a conversation_search or recent_chats result shows it."
        )
    if isinstance(around, str):
        around = blank_to_none(around)
    page = library.read_chat(uri, offset=offset, limit=limit, around=around)
    return fit_page(page, budget, limit, render)
