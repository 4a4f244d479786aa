"""Starting `pastchats serve` as a real subprocess, with the real embedding model, for transport tests."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from storage.library import Library
from tests.tools.helpers import BASE, chat

CHATS = [
    chat(
        "nginx",
        ["How do I put nginx in front of Jellyfin as a reverse proxy?", "Use proxy_pass to port 8096."],
        title="Nginx setup",
        project="homelab",
        updated=BASE + timedelta(hours=1),
    ),
    chat("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], updated=BASE),
]
READY = "Uvicorn running on"


def build_real_store(home: Path, model_cache_dir: Path) -> Path:
    library = Library.open(home, cache_dir=model_cache_dir)
    library.import_conversations(CHATS)
    library.close()
    return home


def server_env(model_cache_dir: Path, **extra: str) -> dict[str, str]:
    """What a desktop client gives a server it starts (HOME, PATH and little else), plus the model cache
    (never a download). HOME is the test run's own (`tests.hermetic`), never the user's."""
    env = {key: os.environ[key] for key in ("HOME", "PATH", "LANG", "TMPDIR") if key in os.environ}
    env["FASTEMBED_CACHE_PATH"] = str(model_cache_dir)
    env["PASTCHATS_SYNC"] = "false"  # never this machine's own agent logs
    env.update(extra)
    return env


def serve_command(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "server.cli", "--home", str(home), *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(args: list[str], env: dict[str, str], ready: re.Pattern[str], timeout: float) -> Iterator[re.Match[str]]:
    """A pastchats process started as a client starts it; yields the first stderr line's match of `ready`
    (it is listening), and stops the process after."""
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=timeout)
            if line is None:
                raise RuntimeError(f"{' '.join(args[-3:])} exited early:\n" + "".join(seen))
            seen.append(line)
            if found := ready.search(line):
                break
        yield found
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def http_server(home: Path, env: dict[str, str], transport: str, timeout: float = 60) -> Iterator[int]:
    """`pastchats serve` on a free loopback port; yields the port once uvicorn says it is listening."""
    port = free_port()
    args = serve_command(home, "-v", "serve", "--transport", transport, "--port", str(port))
    with running(args, env, re.compile(re.escape(READY)), timeout):
        yield port


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def post_initialize(port: int, headers: dict[str, str]) -> int:
    """Status of a raw MCP initialize POST (headers as given: a test may forge Host)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST",
            "/mcp",
            body=json.dumps(INITIALIZE),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        return connection.getresponse().status
    finally:
        connection.close()
