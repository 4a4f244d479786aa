"""The server as a client sees it: tools, instructions, warm-up, and what a crash looks like."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from server.app import SERVING_GC_THRESHOLD, build_server
from server.settings import Settings
from storage.errors import StoreError
from storage.library import Library
from tests.tools.helpers import block_uris, chat, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

CHATS = [
    chat("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass."], project="homelab"),
    chat("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."]),
]
TOOLS = ["conversation_search", "recent_chats", "read_chat"]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library_with(tmp_path_factory.mktemp("store"), CHATS)


async def test_the_three_tools_are_listed_read_only_and_closed_world(library: Library) -> None:
    async with Client(server_for(library)) as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == TOOLS
    for tool in tools:
        assert tool.title
        assert tool.description
        assert tool.output_schema
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.annotations.idempotent_hint is True


async def test_once_warm_the_server_leaves_a_searchs_objects_to_reference_counting(library: Library) -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, *before[1:])  # Python's default, as a fresh server process starts
    try:
        async with Client(server_for(library)) as client:
            await client.call_tool("conversation_search", {"query": "jellyfin"})  # awaits the warm-up
            # a search's ~1-2 thousand live objects no longer start young collections; the older
            # generations keep Python's own thresholds
            assert gc.get_threshold() == (SERVING_GC_THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)


async def test_the_instructions_teach_when_to_search_and_which_tool_to_use(library: Library) -> None:
    async with Client(server_for(library), mode="legacy") as client:
        instructions = client.instructions or ""
    for phrase in ("conversation_search", "recent_chats", "read_chat", "do you remember", "clarifying question"):
        assert phrase in instructions


async def test_every_tool_answers_over_the_legacy_initialize_handshake(library: Library) -> None:
    async with Client(server_for(library), mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == TOOLS
        search = await client.call_tool("conversation_search", {"query": "jellyfin"})
        recent = await client.call_tool("recent_chats", {"n": 2})
        page = await client.call_tool("read_chat", {"uri": "bread"})
    assert block_uris(text_of(search))[0] == "nginx"
    assert sorted(block_uris(text_of(recent))) == ["bread", "nginx"]
    assert block_uris(text_of(page)) == ["bread"]
    for result in (search, recent, page):
        assert not result.is_error
        assert result.structured_content


async def test_initialize_is_answered_while_the_library_is_still_opening(library: Library, tmp_path: Path) -> None:
    opening = threading.Event()
    release = threading.Event()

    def slow_factory(_: Settings) -> Library:
        opening.set()
        release.wait()
        return library

    results: list[Any] = []
    server = build_server(Settings(home=tmp_path), slow_factory)
    try:
        with anyio.fail_after(30):
            async with Client(server, mode="legacy") as client:
                assert [t.name for t in (await client.list_tools()).tools] == TOOLS
                assert not release.is_set()
                async with anyio.create_task_group() as group:

                    async def search() -> None:
                        results.append(await client.call_tool("conversation_search", {"query": "sourdough"}))

                    group.start_soon(search)
                    await anyio.to_thread.run_sync(opening.wait)
                    release.set()
    finally:
        release.set()
    assert block_uris(text_of(results[0]))[0] == "bread"


async def test_a_store_that_cannot_open_makes_tool_calls_fail_with_the_reason(tmp_path: Path) -> None:
    def broken(_: Settings) -> Library:
        raise StoreError("the store in /x is from a newer pastchats")

    async with Client(build_server(Settings(home=tmp_path), broken)) as client:
        result = await client.call_tool("recent_chats", {})
    assert result.is_error
    assert "could not be opened: the store in /x is from a newer pastchats. Tell the user." in text_of(result)


class Exploding:
    """A library whose every read crashes with a message that must not reach the model."""

    def __getattr__(self, name: str) -> Any:
        def crash(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret internal detail")

        return crash


async def test_an_unexpected_crash_is_a_short_error_and_the_details_stay_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_server(Settings(home=tmp_path), lambda _: Exploding())  # type: ignore[arg-type,return-value]
    async with Client(server) as client:
        results = [
            await client.call_tool("conversation_search", {"query": "x"}),
            await client.call_tool("recent_chats", {}),
            await client.call_tool("read_chat", {"uri": "x"}),
        ]
    for result in results:
        assert result.is_error
        assert "Internal error in pastchats" in text_of(result)
        assert "secret" not in text_of(result)
    assert "secret internal detail" in caplog.text
