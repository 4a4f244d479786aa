"""While the server runs it syncs the agent logs it can find, without delaying anything else."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from server.app import build_server
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.importers.sources.agent_home import SHOP, make_agent_home
from tests.tools.helpers import block_uris, text_of

pytestmark = pytest.mark.anyio


async def test_the_server_syncs_agent_logs_in_the_background_and_their_chats_become_searchable(
    tmp_path: Path,
) -> None:
    agent_home = make_agent_home(tmp_path)  # Claude Code, Codex and Gemini logs under a fake home
    settings = Settings(home=tmp_path / "served", user_home=agent_home.home, agent_env={}, sync=True, sync_interval=0)
    server = build_server(settings, lambda s: Library.open(s.home, embedder=HashEmbedder()))
    async with Client(server) as client:
        tools = await client.list_tools()  # answered before the sync has finished
        assert len(tools.tools) == 3
        with anyio.fail_after(60):
            while True:
                result = await client.call_tool("recent_chats", {"n": 20})
                uris = block_uris(text_of(result)) if not result.is_error else []
                if SHOP in uris:
                    break
                await anyio.sleep(0.05)
    library = Library.open(tmp_path / "served", embedder=HashEmbedder())
    sources = library.stats().sources
    assert {"claude-code", "codex", "gemini"} <= set(sources)
    assert (tmp_path / "served" / "archive").is_dir()


async def test_with_sync_off_the_server_reads_no_agent_logs(tmp_path: Path) -> None:
    agent_home = make_agent_home(tmp_path)
    settings = Settings(home=tmp_path / "served", user_home=agent_home.home, agent_env={}, sync=False)
    server = build_server(settings, lambda s: Library.open(s.home, embedder=HashEmbedder()))
    async with Client(server) as client:
        result = await client.call_tool("recent_chats", {"n": 5})
    assert result.is_error
    assert "import" in text_of(result)
    assert not (tmp_path / "served" / "archive").exists()
