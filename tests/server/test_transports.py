"""`pastchats serve` as clients really start it: a subprocess over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests.server.processes import build_real_store, http_server, post_initialize, serve_command, server_env
from tests.tools.helpers import block_uris, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# Spawn to initialize takes ~1 s here; the bound is loose for slow CI machines, and would still catch a
# server that loads the model and the store before answering.
INITIALIZE_WITHIN = 8.0


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    return build_real_store(tmp_path_factory.mktemp("store"), model_cache_dir)


async def test_stdio_answers_initialize_at_once_and_searches_with_the_real_model(
    home: Path, model_cache_dir: Path
) -> None:
    command = serve_command(home, "serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(model_cache_dir))
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        initialized = time.perf_counter() - started
        result = await client.call_tool("conversation_search", {"query": "reverse proxy for my media server"})
    assert initialized < INITIALIZE_WITHIN
    assert not result.is_error
    assert block_uris(text_of(result))[0] == "nginx"
    assert result.structured_content is not None
    assert result.structured_content["mode"] == "hybrid"


async def test_streamable_http_serves_the_tools_on_loopback(home: Path, model_cache_dir: Path) -> None:
    with http_server(home, server_env(model_cache_dir), "streamable-http") as port:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.call_tool("conversation_search", {"query": "sourdough starter"})
        foreign_host = post_initialize(port, {"Host": "evil.example.com"})
    assert block_uris(text_of(result))[0] == "bread"
    assert foreign_host == 421


async def test_sse_serves_the_tools_on_loopback(home: Path, model_cache_dir: Path) -> None:
    with http_server(home, server_env(model_cache_dir), "sse") as port:
        async with Client(sse_client(f"http://127.0.0.1:{port}/sse")) as client:
            result = await client.call_tool("recent_chats", {"n": 1})
    assert block_uris(text_of(result)) == ["nginx"]


async def test_a_configured_token_is_required_on_every_http_request(home: Path, model_cache_dir: Path) -> None:
    env = server_env(model_cache_dir, PASTCHATS_HTTP_TOKEN="s3cret-token")
    with http_server(home, env, "streamable-http") as port:
        missing = post_initialize(port, {})
        wrong = post_initialize(port, {"Authorization": "Bearer nope"})
        right = post_initialize(port, {"Authorization": "Bearer s3cret-token"})
    assert (missing, wrong, right) == (401, 401, 200)


async def test_host_and_origin_must_name_this_server_exactly_not_by_prefix(home: Path, model_cache_dir: Path) -> None:
    with http_server(home, server_env(model_cache_dir), "streamable-http") as port:
        statuses = {
            "own host": post_initialize(port, {}),
            "localhost": post_initialize(port, {"Host": f"localhost:{port}"}),
            "own origin": post_initialize(port, {"Origin": f"http://127.0.0.1:{port}"}),
            "userinfo host": post_initialize(port, {"Host": f"127.0.0.1:{port}@evil.com"}),
            "suffixed host": post_initialize(port, {"Host": f"127.0.0.1:{port}.evil.com"}),
            "other port": post_initialize(port, {"Host": f"127.0.0.1:{port + 1}"}),
            "suffixed origin": post_initialize(port, {"Origin": f"http://127.0.0.1:{port}.evil.com"}),
            "userinfo origin": post_initialize(port, {"Origin": f"http://127.0.0.1:{port}@evil.com"}),
            "foreign origin": post_initialize(port, {"Origin": "http://evil.com"}),
        }
    assert statuses == {
        "own host": 200,
        "localhost": 200,
        "own origin": 200,
        "userinfo host": 421,
        "suffixed host": 421,
        "other port": 421,
        "suffixed origin": 403,
        "userinfo origin": 403,
        "foreign origin": 403,
    }
