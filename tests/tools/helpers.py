"""Building stores and servers for the MCP tests: HashEmbedder stores, servers reached through a real Client."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from server.app import build_server
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message

BASE = datetime(2025, 1, 20, 10, 0, tzinfo=UTC)


def chat(
    cid: str,
    texts: list[str],
    *,
    title: str | None = None,
    project: str | None = None,
    url: str | None = None,
    updated: datetime | None = None,
) -> Conversation:
    updated = updated or BASE
    messages = [
        Message(id=f"{cid}-m{i}", index=i, role="user" if i % 2 == 0 else "assistant", text=text)
        for i, text in enumerate(texts)
    ]
    return Conversation(
        id=cid,
        source="pastchats",
        title=title or texts[0][:40],
        created_at=updated - timedelta(hours=1),
        updated_at=updated,
        project=project,
        url=url,
        messages=messages,
    )


def library_with(home: Path, conversations: list[Conversation]) -> Library:
    library = Library.open(home, embedder=HashEmbedder())
    if conversations:
        library.import_conversations(conversations)
    return library


def server_for(library: Library, budget: int = 12_000) -> MCPServer[Any]:
    settings = Settings(home=library.home, output_budget_chars=budget)
    return build_server(settings, lambda _: library)


async def call(server: MCPServer[Any], tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async with Client(server) as client:
        return await client.call_tool(tool, arguments)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def block_uris(text: str) -> list[str]:
    """The uri attribute of every `<chat` block opening, in order."""
    return re.findall(r"^<chat uri='([^']*)'", text, flags=re.MULTILINE)
