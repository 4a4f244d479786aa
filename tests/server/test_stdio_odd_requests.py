"""`pastchats serve` over stdio answers every line a client sends, readable or not: a request it cannot
read gets a JSON-RPC error (with the request's id when the line holds one), and serving goes on."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

import pytest

from tests.server.processes import serve_command, server_env

pytestmark = pytest.mark.integration

ANSWER_WITHIN = 20.0


class Stdio:
    def __init__(self, home: Path, model_cache_dir: Path):
        self.process = subprocess.Popen(
            serve_command(home, "serve"),
            env=server_env(model_cache_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, object]:
        answer = json.loads(self.lines.get(timeout=ANSWER_WITHIN))
        assert isinstance(answer, dict)
        return answer


@pytest.fixture
def stdio(tmp_path: Path, model_cache_dir: Path) -> object:
    server = Stdio(tmp_path / "home", model_cache_dir)
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    server.send(json.dumps(initialize).encode())
    assert server.answer()["id"] == 0
    server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield server
    server.process.kill()
    server.process.wait()


def _call(request_id: int, query: str) -> bytes:
    """A search request written by hand: `query` goes in as JSON text, escapes and all."""
    params = '{"name": "conversation_search", "arguments": {"query": "' + query + '"}}'
    return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'.encode()


@pytest.mark.parametrize(
    ("line", "request_id"),
    [
        (_call(7, "a \\udc00 b"), 7),  # a lone surrogate escape in the arguments
        (b'{"jsonrpc": "2.0", "id": 8, "method": ', None),  # cut short
        (b"[" * 100_000, None),  # nested past any parser's depth
        (b"\xff\xfe not even text", None),
        (b'{"jsonrpc": "2.0", "id": 9}', 9),  # JSON, but no JSON-RPC message
    ],
)
def test_an_unreadable_request_gets_an_error_and_serving_goes_on(
    stdio: Stdio, line: bytes, request_id: int | None
) -> None:
    stdio.send(line)
    answer = stdio.answer()
    assert answer["id"] == request_id
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["code"] in (-32700, -32600)
    assert error["message"]

    stdio.send(b'{"jsonrpc": "2.0", "id": 10, "method": "tools/list"}')
    assert stdio.answer()["id"] == 10
