"""A server that starts with the model embeds, in the background, the passages that awaited it."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client

from server.app import build_server
from server.settings import Settings
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.units.windows import WINDOW
from tests.storage.helpers import conversation
from tests.storage.test_derived_windows import expected, rows

pytestmark = pytest.mark.anyio

CHATS = [
    conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."]),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
]


async def test_waiting_passages_are_embedded_after_start_while_the_tools_already_answer(tmp_path: Path) -> None:
    home = tmp_path / "store"
    # No model yet; the one named is the test embedder the server then has (so it is not a model change).
    modelless = Library.open(home, model_name=HashEmbedder(384).model_name, cache_dir=tmp_path / "no-models")
    modelless.import_conversations(CHATS)
    assert modelless.pending_embeddings() == 4 + 2  # four messages, one exchange window per chat
    opened: list[Library] = []

    def with_model(settings: Settings) -> Library:
        opened.append(Library.open(settings.home, embedder=HashEmbedder(384)))
        return opened[-1]

    server = build_server(Settings(home=home, sync=False), with_model)
    async with Client(server) as client:
        first = await client.call_tool("conversation_search", {"query": "sourdough starter"})
        assert not first.is_error
        with anyio.fail_after(60):
            while opened[0].pending_embeddings():
                await anyio.sleep(0.05)
        after = await client.call_tool("conversation_search", {"query": "sourdough starter acetone"})
    assert after.structured_content is not None
    assert after.structured_content["mode"] == "hybrid"
    assert after.structured_content["chats"][0]["uri"] == "bread"
    # the windows were derived from their messages' vectors once those existed (no model run of their own)
    stored = rows(opened[0])
    windows = [key for key, row in stored.items() if row["kind"] == WINDOW]
    assert len(windows) == 2
    assert all(not stored[key]["pending"] for key in windows)
    assert all(np.allclose(stored[key]["vector"], expected(opened[0], key), atol=1e-6) for key in windows)
