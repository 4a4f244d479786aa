"""The stdio front after `initialize`: until the MCP SDK is up it answers `ping`, `tools/list` and the
tool calls it can check, with the SDK's bytes, and leaves everything else to the SDK, in order.

Whole conversations run through `pastchats serve` twice, on one real store with the real model: once
through the front, once with the front stepping aside (an `initialize` carrying a `_meta`, a shape it
leaves to the SDK), and every reply must be the same, byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from server import stdio_front_calls, stdio_front_lines, stdio_front_replies
from server.stdio_front_gen import after_initialize, call_shapes, pastchats_server
from storage.library import Library
from tests.conftest import REPO_ROOT
from tests.server.processes import CHATS
from tests.tools.helpers import BASE, block_uris, chat, text_of

INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
FRONT_CALL = "answered by the stdio front"
SDK_UP = "initialize was answered before the MCP SDK was up, with the reply the SDK then gave"
ODD_TEXT = 'Ünïcödé 😀 \x01 \x1f \x7f \u2028 tab\t "quoted" \\ back </chat> 日本語 nginx'


def request(request_id: Any, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, ensure_ascii=False) + "\n"


def call(request_id: Any, tool: str, **arguments: Any) -> str:
    return request(request_id, "tools/call", {"name": tool, "arguments": arguments})


def initialize(version: str = "2025-06-18", **extra: Any) -> str:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}, **extra}
    return request(0, "initialize", params)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    """The transport tests' two chats and one of odd text (control characters, unicode, markup)."""
    store = tmp_path_factory.mktemp("store")
    library = Library.open(store, cache_dir=model_cache_dir)
    odd_texts = [ODD_TEXT, "Reply with\nnew lines\r\nand \x00 a NUL", *(f"nginx note {n} " * 40 for n in range(60))]
    odd = chat("odd", odd_texts, title="Odd ☃", project="weird", updated=BASE + timedelta(hours=2))
    library.import_conversations([*CHATS, odd])
    library.close()
    return store


def serve_process(home: Path, model_cache_dir: Path, scratch: Path) -> subprocess.Popen[bytes]:
    (scratch / "user").mkdir(exist_ok=True)
    env = {"HOME": str(scratch / "user"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env["FASTEMBED_CACHE_PATH"] = str(model_cache_dir)
    command = [sys.executable, "-m", "server.cli", "--home", str(home), "-vv", "serve"]
    errors = (scratch / "stderr.txt").open("wb")
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=REPO_ROOT
    )


def wait_for(path: Path, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{text!r} never logged: {path.read_text()[-2000:]}"
        time.sleep(0.05)


def conversation(
    home: Path, model_cache_dir: Path, scratch: Path, first: str, before: str, after: str = "", replies: int = 0
) -> tuple[dict[Any, str], str]:
    """Replies by id to `first` + `before` (sent at once, before the SDK is up) and to `after` (sent once
    the SDK is up), and the server's log; stdin closes once all `replies` have come."""
    scratch.mkdir()
    process = serve_process(home, model_cache_dir, scratch)
    assert process.stdin is not None
    assert process.stdout is not None
    written: list[str] = []
    try:
        process.stdin.write((first + before).encode())
        process.stdin.flush()
        if after:
            if first == initialize():  # through the front: the SDK is up once it has replayed `initialize`
                wait_for(scratch / "stderr.txt", SDK_UP)
            process.stdin.write(after.encode())
            process.stdin.flush()
        written.extend(process.stdout.readline().decode() for _ in range(replies))
        process.stdin.close()
        written.extend(line.decode() for line in process.stdout)
        assert process.wait(timeout=120) == 0
    finally:
        process.kill()
    by_id = {json.loads(line).get("id"): line for line in written}
    assert len(by_id) == len(written) == replies, written
    return by_id, (scratch / "stderr.txt").read_text(errors="replace")


def through_front_and_sdk_alone(
    home: Path, model_cache_dir: Path, tmp_path: Path, before: str, after: str, replies: int
) -> tuple[dict[Any, str], dict[Any, str], str]:
    front, log = conversation(home, model_cache_dir, tmp_path / "front", initialize(), before, after, replies)
    aside = initialize(_meta={"progressToken": "aside"})  # a shape the front leaves to the SDK
    alone, alone_log = conversation(home, model_cache_dir, tmp_path / "alone", aside, before, after, replies)
    assert FRONT_CALL not in alone_log
    return front, alone, log


# Every tool, with filters, paging, errors of the store and of the arguments, and other requests.
CALLS = (
    INITIALIZED
    + request(1, "tools/list")
    + request(2, "ping")
    + call(3, "conversation_search", query="nginx reverse proxy")
    + call(4, "conversation_search", query="nginx note", max_results=2, project="WEIRD")
    + call(5, "conversation_search", query="sourdough", after="2020-01-01T00:00:00Z", before="2020-01-02T00:00Z")
    + call(6, "conversation_search", query="   ")
    + call(7, "conversation_search", query="ünïcödé 😀 日本語")
    + call(8, "recent_chats", n=2)
    + call(9, "recent_chats", n=1, sort_order="asc", before="2025-01-20T11:30:00+00:00", project=None)
    + call(10, "recent_chats", after="2026-01-01T00:00:00Z", before="2025-01-01T00:00:00Z")
    + call(11, "read_chat", uri="odd", limit=3)
    + call(12, "read_chat", uri="odd", around=30, limit=2)
    + call(13, "read_chat", uri="odd", offset=55)
    + call(14, "read_chat", uri="no-such-chat")
    + call(15, "read_chat", uri="odd", around="odd-m1")
    + request(16, "tools/call", {"name": "read_chat"})
    + call(17, "recent_chats", n=50)
    + call(18, "recent_chats", n="2")
    + call(19, "conversation_search", query="nginx", colour="blue")
    + call(20, "conversation_search", query="nginx", project="null")
    + call(21, "no_such_tool")
    + request(22, "resources/list")
    + request(23, "no/such/method")
    + request("string-id", "tools/list", {"cursor": "x"})
    + "{not json\n"
)
REPLIES = 25  # the malformed line gets one too


def test_a_conversation_sent_before_the_sdk_is_up_is_answered_as_the_sdk_alone_answers_it(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    front, alone, log = through_front_and_sdk_alone(home, model_cache_dir, tmp_path, CALLS, "", REPLIES)
    assert front == alone
    assert log.count(FRONT_CALL) == 13  # the calls of our tools it can check; the SDK answered the rest
    assert json.loads(front[11])["result"]["structuredContent"]["chat"]["title"] == "Odd ☃"


def test_calls_sent_once_the_sdk_is_up_are_the_sdks_and_read_the_same(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    before = INITIALIZED + call(1, "recent_chats", n=1)
    after = request(2, "ping") + call(3, "conversation_search", query="nginx") + call(4, "read_chat", uri="odd")
    front, alone, log = through_front_and_sdk_alone(home, model_cache_dir, tmp_path, before, after, 5)
    assert front == alone
    assert log.count(FRONT_CALL) == 1  # the first call only


def test_a_request_left_to_the_sdk_is_answered_once_it_is_up_after_the_fronts(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    lines = INITIALIZED + call(1, "recent_chats", n=1.0) + call(2, "recent_chats", n=1)
    scratch = tmp_path / "front"
    scratch.mkdir()
    process = serve_process(home, model_cache_dir, scratch)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write((initialize() + lines).encode())
        process.stdin.flush()
        order = [json.loads(process.stdout.readline()).get("id") for _ in range(3)]
        process.stdin.close()
        assert process.wait(timeout=120) == 0
    finally:
        process.kill()
    assert order == [0, 2, 1]  # the float is the SDK's to judge, and the SDK comes up after the library


def test_the_stored_replies_are_the_sdks_for_this_install() -> None:
    message = "regenerate them: `uv run python -m server.stdio_front_gen`"
    server = pastchats_server()
    assert after_initialize(server, "tools/list") == stdio_front_replies.TOOLS_LIST, message
    assert after_initialize(server, "ping") == stdio_front_replies.PING, message
    assert call_shapes() == stdio_front_replies.CALL_SHAPES, message


TAKEN = {
    "ping": (request(1, "ping"), "reply"),
    "ping, empty params": (request(1, "ping", {}), "reply"),
    "tools/list": (request("a-1", "tools/list"), "reply"),
    "a search": (call(1, "conversation_search", query="x"), "call"),
    "a search, every argument": (
        call(1, "conversation_search", query="x", max_results=10, project=None, after="2025-05-01T00:00:00Z"),
        "call",
    ),
    "recent, no arguments": (request(1, "tools/call", {"name": "recent_chats"}), "call"),
    "recent, ascending": (call(1, "recent_chats", n=20, sort_order="asc", before="2025-05-01"), "call"),
    "read by number": (call(1, "read_chat", uri="u", around=12, offset=0, limit=1), "call"),
    "read by id, a number in a string": (call(1, "read_chat", uri="u", around="12"), "call"),
    "read by id, true in a string (the SDK keeps it a string)": (call(1, "read_chat", uri="u", around="true"), "call"),
}
LEFT = {
    "initialized": INITIALIZED,
    "a second initialize": initialize(),
    "tools/list with a cursor": request(1, "tools/list", {"cursor": "x"}),
    "ping with a _meta": request(1, "ping", {"_meta": {}}),
    "ping, params null": request(1, "ping").replace("}\n", ', "params": null}\n'),
    "an id null": request(None, "ping"),
    "an id a float": request(1.5, "ping"),
    "another method": request(1, "resources/list"),
    "jsonrpc 1.0": request(1, "ping").replace("2.0", "1.0"),
    "a lone CR": request(1, "ping").replace(", ", ",\r", 1),
    "not UTF-8": request(1, "ping").encode().replace(b"ping", b"p\xffng").decode("latin-1"),
    "a member twice": request(1, "ping").replace('"id": 1', '"id": 1, "id": 2'),
    "malformed": '{"jsonrpc": "2.0", "id": 1\n',
    "unknown tool": call(1, "delete_everything"),
    "unknown argument": call(1, "conversation_search", query="x", colour="red"),
    "no query": call(1, "conversation_search", max_results=1),
    "arguments null": request(1, "tools/call", {"name": "recent_chats", "arguments": None}),
    "a call's _meta": request(1, "tools/call", {"name": "recent_chats", "arguments": {}, "_meta": {}}),
    "a float count": call(1, "recent_chats", n=2.0),
    "a bool count": call(1, "recent_chats", n=True),
    "a count in a string": call(1, "recent_chats", n="2"),
    "a count too big": call(1, "recent_chats", n=21),
    "a count too small": call(1, "conversation_search", query="x", max_results=0),
    "a negative offset": call(1, "read_chat", uri="u", offset=-1),
    "a huge around": call(1, "read_chat", uri="u", around=2**60),
    "a query not text": call(1, "conversation_search", query=["x"]),
    "a date that is not one": call(1, "recent_chats", before="last week"),
    "a project the SDK reads as null": call(1, "recent_chats", project="null"),
    "around the SDK reads as a list": call(1, "read_chat", uri="u", around="[12]"),
    "an unknown sort order": call(1, "recent_chats", sort_order="random"),
    "a lone surrogate": call(1, "conversation_search", query="x").replace('"x"', '"\\ud800"'),
}


@pytest.mark.parametrize("name", list(TAKEN))
def test_what_the_front_answers_itself(name: str) -> None:
    line, kind = TAKEN[name]
    action = stdio_front_lines.answer(line.encode(), "2025-06-18")
    assert action is not None
    assert action[0] == kind


@pytest.mark.parametrize("name", list(LEFT))
def test_what_the_front_leaves_to_the_sdk(name: str) -> None:
    line = LEFT[name].encode("latin-1" if name == "not UTF-8" else "utf-8")
    assert stdio_front_lines.answer(line, "2025-06-18") is None


def test_a_call_gets_every_argument_its_body_takes_defaults_included() -> None:
    action = stdio_front_lines.answer(call(7, "read_chat", uri="odd", around="odd-m1").encode(), "2025-11-25")
    assert action == ("call", ("7", "read_chat", {"uri": "odd", "offset": 0, "limit": 40, "around": "odd-m1"}))
    checked = stdio_front_calls.checked_call(
        "2025-11-25", {"name": "recent_chats", "arguments": {"after": "2025-05-01"}}
    )
    assert checked is not None
    assert str(checked[1]["after"]) == "2025-05-01 00:00:00"  # as pydantic reads it for the SDK's handler


def test_eof_while_the_front_runs_a_call_ends_the_server_once_the_call_is_answered(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    process = serve_process(home, model_cache_dir, tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write((initialize() + INITIALIZED + call(1, "conversation_search", query="nginx")).encode())
        process.stdin.close()  # at once: the call is still waiting for the library
        written = [json.loads(line) for line in process.stdout]
        assert process.wait(timeout=120) == 0
    finally:
        process.kill()
    log = (tmp_path / "stderr.txt").read_text()
    assert [message["id"] for message in written] == [0, 1]
    assert written[1]["result"]["content"][0]["text"].startswith("<chat uri='nginx'")
    assert FRONT_CALL in log
    assert "Traceback" not in log


def test_ctrl_c_while_the_front_runs_a_call_stops_the_server_at_once(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    process = serve_process(home, model_cache_dir, tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write((initialize() + INITIALIZED + call(1, "conversation_search", query="nginx")).encode())
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0
        wait_for(tmp_path / "stderr.txt", "the stdio front answers tool calls")  # the library is opening
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert process.stdout.read() == b""  # the call was not answered, nor half written
    finally:
        process.kill()
    assert "pastchats: stopped" in (tmp_path / "stderr.txt").read_text()


FIRST_CALL_SCRIPT = """
import sys, threading
from pathlib import Path
from server import stdio_front, wiring
from server.settings import Settings
front = stdio_front.start()
front.wait_for_first_line()
library = wiring.open_for_serving(Settings(home=Path(sys.argv[1]), sync=False))
front.serve_calls(lambda: library, 12_000)
for thread in threading.enumerate():
    if thread.name == "pastchats-stdio-front":
        thread.join()  # stdin read to its end, every call taken
front.wait_for_calls()
print(sorted(name for name in ("mcp", "mcp_types", "anyio") if name in sys.modules), file=sys.stderr)
"""


def test_the_fronts_first_call_needs_no_mcp_sdk(home: Path, model_cache_dir: Path, tmp_path: Path) -> None:
    lines = initialize() + INITIALIZED + call(1, "conversation_search", query="nginx") + call(2, "recent_chats")
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL_SCRIPT, str(home)],
        input=lines.encode(),
        capture_output=True,
        env={**env, "FASTEMBED_CACHE_PATH": str(model_cache_dir)},
        cwd=REPO_ROOT,
        timeout=120,
        check=True,
    )
    assert done.stderr.decode().strip().splitlines()[-1] == "[]"
    replies = [json.loads(line) for line in done.stdout.decode().split("\n") if line]  # not at U+2028
    assert sorted(reply["id"] for reply in replies) == [0, 1, 2]
    assert all("isError" in reply["result"] for reply in replies if reply["id"])


async def _through_the_official_client(home: Path, model_cache_dir: Path, log: Path) -> list[CallToolResult]:
    env = {"HOME": str(log.parent), "PATH": os.environ.get("PATH", ""), "PASTCHATS_LOG_FILE": str(log)}
    env["FASTEMBED_CACHE_PATH"] = str(model_cache_dir)
    command = [sys.executable, "-m", "server.cli", "--home", str(home), "-v", "serve"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO_ROOT))
    async with Client(params, mode="legacy") as client:
        return [
            await client.call_tool("conversation_search", {"query": "reverse proxy for my media server"}),
            await client.call_tool("recent_chats", {"n": 1}),
            await client.call_tool("read_chat", {"uri": "odd", "limit": 2}),
            await client.call_tool("read_chat", {"uri": "missing"}),
        ]


def test_the_official_client_reads_the_fronts_replies(home: Path, model_cache_dir: Path, tmp_path: Path) -> None:
    found = anyio.run(_through_the_official_client, home, model_cache_dir, tmp_path / "server.log")
    search, recent, read, missing = found
    assert block_uris(text_of(search))[0] == "nginx"
    assert search.structured_content is not None
    assert block_uris(text_of(recent)) == ["odd"]
    assert read.structured_content is not None
    assert read.structured_content["chat"]["title"] == "Odd ☃"
    assert missing.is_error
    assert "Use a uri exactly as" in text_of(missing)
    assert FRONT_CALL in (tmp_path / "server.log").read_text()  # the first call at least


def test_a_client_that_stops_reading_still_ends_the_server_with_its_stdin(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    process = serve_process(home, model_cache_dir, tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdout.close()  # every reply, the front's and the SDK's, meets a closed pipe
        lines = initialize() + INITIALIZED + request(1, "ping") + call(2, "recent_chats", n=1) + request(3, "x")
        process.stdin.write(lines.encode())
        process.stdin.close()
        process.wait(timeout=120)  # ends, whatever its status: nothing hangs on a reply nobody reads
    finally:
        process.kill()


INSPECTOR = REPO_ROOT / "tests" / "integration" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.mark.integration
@pytest.mark.skipif(not INSPECTOR.exists(), reason="the MCP Inspector is not installed (npm ci in tests/integration)")
def test_the_inspector_cli_reads_the_fronts_replies(home: Path, model_cache_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    command = [str(INSPECTOR), "--cli", "-e", f"FASTEMBED_CACHE_PATH={model_cache_dir}"]
    command += ["-e", f"PASTCHATS_LOG_FILE={log}"]
    command += [sys.executable, "-m", "server.cli", "--home", str(home), "-v", "serve"]
    command += ["--method", "tools/call", "--tool-name", "read_chat", "--tool-arg", "uri=odd", "limit=2"]
    env = {**os.environ, "HOME": str(tmp_path)}  # the Inspector keeps a catalog file in $HOME
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    called = json.loads(done.stdout)
    assert called["structuredContent"]["chat"]["title"] == "Odd ☃"
    assert called["structuredContent"]["messages"][0]["text"] == ODD_TEXT
    assert FRONT_CALL in log.read_text()
