"""The stdio front (`server.stdio_front`): its early `initialize` reply is byte for byte the SDK's, it
steps aside for anything else, and a client sees the same conversation as without it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from server import stdio_front, stdio_front_lines, stdio_front_replies
from server.stdio_front_gen import DISTRIBUTIONS, initialize_line, pastchats_server, results, sdk_output, sdk_replies
from tests.conftest import REPO_ROOT

UNSUPPORTED = ["1999-01-01", "2026-07-28", "", "latest"]
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def request(request_id: Any, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


def initialize(capabilities: Any = None, client: Any = None, request_id: Any = 0, **extra: Any) -> str:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {} if capabilities is None else capabilities,
        "clientInfo": client or {"name": "test", "version": "1.0"},
        **extra,
    }
    return request(request_id, "initialize", params)


@pytest.fixture(scope="module")
def server() -> MCPServer[Any]:
    return pastchats_server()


def test_the_stored_replies_are_generated_from_this_install(server: MCPServer[Any]) -> None:
    message = "regenerate them: `uv run python -m server.stdio_front_gen`"
    assert {name: importlib.metadata.version(name) for name in DISTRIBUTIONS} == stdio_front_replies.GENERATED_WITH
    assert results(server) == stdio_front_replies.RESULTS, message


def test_installed_versions_are_read_as_importlib_metadata_reads_them() -> None:
    for name in DISTRIBUTIONS:
        assert stdio_front_lines.installed_version(name) == importlib.metadata.version(name)
    assert stdio_front_lines.installed_version("no-such-distribution") is None


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, *UNSUPPORTED])
@pytest.mark.parametrize("request_id", [0, 7, -3, 2**40, "req-1", "a.b:c_d"])
def test_the_early_reply_is_the_sdks_for_every_protocol_version(
    server: MCPServer[Any], version: str, request_id: int | str
) -> None:
    line = initialize_line(version, request_id)
    assert stdio_front_lines.early_reply(line.encode()) == sdk_output(server, line)


# What real clients send first (the official Python client, the Inspector CLI), and variations.
ANSWERED = {
    "mcp Client": initialize_line("2025-11-25", 1),
    "Inspector CLI": (
        '{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},'
        '"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/skills":{}}},'
        '"clientInfo":{"name":"inspector-cli","version":"2.12.0"}},"jsonrpc":"2.0","id":0}\n'
    ),
    "every capability": initialize(
        {
            "roots": {"listChanged": False},
            "sampling": {"context": {}, "tools": {"x": 1}},
            "elicitation": {"form": {}, "url": {}},
            "experimental": {"mine": {"on": True}},
            "tasks": {"list": {}, "cancel": {}},
        }
    ),
    "client title and description": initialize(client={"name": "c", "version": "2", "title": "C", "description": "d"}),
    "CRLF line end": initialize().replace("\n", "\r\n"),
    "spaces around": " " + initialize().replace("\n", " \n"),
    "unicode client name": initialize(client={"name": "klient-ü-😀", "version": "1"}),
}
STEPPED_ASIDE = {
    "a ping first": request(1, "ping"),
    "tools/list first": request(1, "tools/list"),
    "malformed": '{"jsonrpc":"2.0","id":1,"method":"initialize"\n',
    "not an object": "[1, 2]\n",
    "no params": request(1, "initialize"),
    "params not an object": request(1, "initialize", [1]),
    "no capabilities": request(
        1, "initialize", {"protocolVersion": "2025-06-18", "clientInfo": {"name": "a", "version": "1"}}
    ),
    "no client version": initialize(client={"name": "a"}),
    "client name a number": initialize(client={"name": 5, "version": "1"}),
    "client icons": initialize(client={"name": "a", "version": "1", "icons": []}),
    "a _meta": initialize(_meta={"progressToken": 1}),
    "an unknown param": initialize(extra=True),
    "version a number": request(
        1, "initialize", {"protocolVersion": 20250618, "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}
    ),
    "roots flag a string": initialize({"roots": {"listChanged": "yes"}}),
    "an unknown capability": initialize({"telepathy": {}}),
    "sampling context a list": initialize({"sampling": {"context": []}}),
    "task requests": initialize({"tasks": {"requests": {"sampling": {"createMessage": {}}}}}),
    "id true": initialize(request_id=True),
    "id null": initialize(request_id=None),
    "id a float": initialize(request_id=1.5),
    "id huge": initialize(request_id=2**70),
    "id with a space": initialize(request_id="a b"),
    "id with a quote": initialize(request_id='a"b'),
    "a notification": '{"jsonrpc":"2.0","method":"initialize","params":{}}\n',
    "jsonrpc 1.0": initialize().replace('"2.0"', '"1.0"'),
    "a member twice": initialize().replace('{"jsonrpc": "2.0",', '{"jsonrpc": "2.0", "id": 9,'),
    "NaN inside": initialize({"experimental": {"x": {"v": float("nan")}}}),
    "a lone CR inside": initialize().replace(", ", ",\r", 1),
    "no newline (EOF)": initialize().rstrip("\n"),
}


@pytest.mark.parametrize("name", list(ANSWERED))
def test_what_real_clients_send_first_is_answered_early_as_the_sdk_answers_it(
    server: MCPServer[Any], name: str
) -> None:
    line = ANSWERED[name]
    reply = stdio_front_lines.early_reply(line.encode())
    assert reply is not None
    assert reply == sdk_output(server, line)


@pytest.mark.parametrize("name", list(STEPPED_ASIDE))
def test_anything_else_is_left_to_the_sdk(name: str) -> None:
    assert stdio_front_lines.early_reply(STEPPED_ASIDE[name].encode()) is None


def test_the_front_steps_aside_for_an_sdk_other_than_the_replies_were_generated_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(stdio_front_replies.GENERATED_WITH, "mcp", "0.0.1")
    assert not stdio_front_lines.replies_are_current()
    assert stdio_front.start() is None


# `pastchats serve` as a client starts it: a real subprocess over stdio, HOME and PATH only.
ANSWERED_EARLY = "initialize was answered before the MCP SDK was up, with the reply the SDK then gave"


@pytest.fixture
def serve(tmp_path: Path) -> list[str]:
    (tmp_path / "user").mkdir()
    return [sys.executable, "-m", "server.cli", "--home", str(tmp_path / "store"), "-vv", "serve"]


def env_of(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "user"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def front_conversation(command: list[str], tmp_path: Path, lines: str, replies: int) -> tuple[list[str], str, int]:
    """`pastchats serve` given these lines at once; stdin closes once `replies` lines have come back."""
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env_of(tmp_path), cwd=REPO_ROOT
        )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(lines.encode())
        process.stdin.flush()
        written = [process.stdout.readline().decode() for _ in range(replies)]
        process.stdin.close()
        written.extend(line.decode() for line in process.stdout)  # nothing more is expected
        status = process.wait(timeout=60)
    finally:
        process.kill()
    return written, errors.read_text(), status


# (lines sent at once, how many replies they get); after `initialize` the front answers what it can
CONVERSATIONS = {
    "initialize, then ping and tools/list at once": (
        initialize() + INITIALIZED + request(1, "ping") + request(2, "tools/list"),
        3,
    ),
    "a second initialize": (initialize() + INITIALIZED + initialize(request_id=5) + request(6, "ping"), 3),
    "a malformed first line": ("{nope\n" + initialize() + INITIALIZED + request(1, "ping"), 2),
    "ping and tools/list before initialize": (
        request(1, "ping") + request(2, "tools/list") + initialize(request_id=3),
        3,
    ),
    "EOF before initialize": ("", 0),
}


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_a_client_sees_through_the_front_what_the_sdk_alone_writes(
    serve: list[str], tmp_path: Path, server: MCPServer[Any], name: str
) -> None:
    lines, replies = CONVERSATIONS[name]
    written, stderr, status = front_conversation(serve, tmp_path, lines, replies)
    expected = sdk_replies(server, lines, replies)
    assert status == 0, stderr
    assert len(expected) == replies
    # Replies to concurrent requests may come in either order; the first reply is always first.
    assert written[:1] == expected[:1]
    assert sorted(written) == sorted(expected)
    assert (ANSWERED_EARLY in stderr) == lines.startswith(initialize())


def test_the_early_reply_comes_before_anything_else_is_sent_and_the_sdk_answers_the_rest(
    serve: list[str], tmp_path: Path, server: MCPServer[Any]
) -> None:
    process = subprocess.Popen(
        serve,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_of(tmp_path),
        cwd=REPO_ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        process.stdin.write(initialize().encode())
        process.stdin.flush()
        first = process.stdout.readline().decode()
        process.stdin.write((INITIALIZED + request(1, "tools/list")).encode())
        process.stdin.flush()
        listed = json.loads(process.stdout.readline())
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read().decode()
    finally:
        process.kill()
    assert first == sdk_output(server, initialize())
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["conversation_search", "recent_chats", "read_chat"]
    assert ANSWERED_EARLY in stderr
    assert "differed" not in stderr


def test_the_early_reply_needs_neither_the_sdk_nor_pydantic(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from server import stdio_front\n"
        "front = stdio_front.start()\n"
        "front.wait_for_first_line()\n"
        "loaded = sorted(name for name in ('mcp', 'mcp_types', 'pydantic', 'anyio') if name in sys.modules)\n"
        "print(front.early is not None, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=initialize().encode(),
        capture_output=True,
        env={**env_of(tmp_path), "PYTHONPATH": str(REPO_ROOT)},
        cwd=REPO_ROOT,
        timeout=60,
        check=True,
    )
    assert done.stderr.decode().strip() == "True []"
    assert done.stdout.decode() == stdio_front_lines.early_reply(initialize().encode())
