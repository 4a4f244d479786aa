"""The first hour: only what a command needs is loaded, wrong input fails fast and says why,
`serve` explains itself on a terminal, and Ctrl-C stops it at once."""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.server.processes import READY, build_real_store, free_port, serve_command, server_env

HEAVY = ("fastembed", "onnxruntime", "lancedb", "mcp")

PROBE = """
import sys
sys.argv[0] = "pastchats"  # as the installed command runs it
from server.cli import main
try:
    main()
except SystemExit as exit:
    code = exit.code
print("\\nLOADED " + " ".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def probe(
    env: dict[str, str], *args: str, heavy: tuple[str, ...] = HEAVY
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run a command in a fresh interpreter; which heavy packages it imported."""
    script = PROBE.format(heavy=heavy)
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=120)
    loaded = done.stderr.rsplit("LOADED", 1)[1].split()
    return done, set(loaded)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    return build_real_store(tmp_path_factory.mktemp("store"), model_cache_dir)


@pytest.fixture
def env(model_cache_dir: Path) -> dict[str, str]:
    return server_env(model_cache_dir)


def test_help_and_argument_errors_load_nothing_heavy(env: dict[str, str]) -> None:
    for args in (["--help"], ["import", "--help"], ["recent", "-n", "99"], ["setup", "emacs"]):
        done, loaded = probe(env, *args)
        assert loaded == set(), (args, loaded)
        assert done.returncode in (0, 2)


def test_a_bad_path_fails_at_once_without_loading_the_store_or_the_model(env: dict[str, str], tmp_path: Path) -> None:
    done, loaded = probe(env, "--home", str(tmp_path / "s"), "import", str(tmp_path / "nowhere.json"))
    assert done.returncode == 1
    assert "nowhere.json does not exist" in done.stderr
    assert loaded == set()
    assert not (tmp_path / "s").exists()


def test_a_format_that_does_not_fit_says_which_format_the_file_looks_like(env: dict[str, str], tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "c1", "messages": [{"role": "user", "text": "hi"}]}) + "\n", encoding="utf-8")
    done, loaded = probe(env, "--home", str(tmp_path / "s"), "import", str(chats), "--format", "claude")
    assert done.returncode == 1
    assert "does not look like a claude source; it looks like plain (use --format plain" in done.stderr
    assert loaded == set()


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["recent"],
        ["read", "nginx"],
        ["export", "--out", "-"],
        ["delete", "no-such-chat"],
        ["forget", "--project", "no-such-project", "--yes"],
    ],
)
def test_reading_and_deleting_never_load_the_embedding_model(store: Path, env: dict[str, str], args: list[str]) -> None:
    done, loaded = probe(env, "--home", str(store), *args)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert not loaded & {"fastembed", "onnxruntime"}, loaded
    if args[0] in ("stats", "recent", "read"):  # the tool bodies they share with the server run without MCP
        assert "mcp" not in loaded, loaded


# What a command that only reads never needs on a healthy store: LanceDB, the model, the MCP SDK.
STORE_ENGINE = ("lancedb", "fastembed", "onnxruntime", "mcp")


def test_stats_and_recent_answer_from_the_catalog_without_lancedb_or_the_model_and_as_lancedb_would(
    store: Path, env: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "store"
    shutil.copytree(store, home)  # new inodes: its catalog no longer names the tables' manifests
    commands = [["stats"], ["stats", "--json"], ["recent"], ["recent", "-n", "5", "--sort-order", "asc", "--json"]]
    for args in commands:
        (home / "catalog.sqlite").unlink(missing_ok=True)
        slow, loaded = probe(env, "--home", str(home), *args, heavy=STORE_ENGINE)
        assert slow.returncode == 0, slow.stderr
        assert "lancedb" in loaded  # answered from LanceDB, and rebuilt the catalog on the way
        fast, loaded = probe(env, "--home", str(home), *args, heavy=STORE_ENGINE)
        assert loaded == set(), (args, loaded)
        assert fast.stdout == slow.stdout, args


def test_serve_on_a_terminal_says_it_waits_for_a_client_and_stops_at_once_on_ctrl_c(
    store: Path, env: dict[str, str]
) -> None:
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        serve_command(store, "serve"), env=env, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(terminal)
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert "waiting for an MCP client on stdin" in line
        assert "pastchats setup" in line
        time.sleep(0.5)  # let the transport start reading stdin: the case Ctrl-C used to hang in
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) != 0
        assert time.monotonic() - started < 5
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
def test_ctrl_c_stops_an_http_server_at_once_even_with_a_client_connected(
    store: Path, env: dict[str, str], transport: str
) -> None:
    port = free_port()
    args = serve_command(store, "-v", "serve", "--transport", transport, "--port", str(port))
    process = subprocess.Popen(
        args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        while READY not in process.stderr.readline().decode():
            assert time.monotonic() < deadline
            assert process.poll() is None
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            path = "/sse" if transport == "sse" else "/mcp"
            request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n"
            client.sendall(request.encode())
            client.recv(1024)  # the stream (or its refusal) has begun; the connection stays open
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) != 0
            assert time.monotonic() - started < 5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_without_a_model_search_answers_from_keywords_and_fastembeds_own_log_lines_stay_out(
    tmp_path: Path,
) -> None:
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "PASTCHATS_SYNC": "false"}
    imported = subprocess.run(
        [*serve_command(tmp_path / "store", "import", "--sample")], env=env, capture_output=True, text=True, timeout=300
    )
    assert imported.returncode == 0, imported.stderr
    found = subprocess.run(
        [*serve_command(tmp_path / "store", "search", "monstera yellow leaves")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert "keyword-only results" in found.stdout
    for output in (imported.stderr, found.stderr):
        assert " | ERROR" not in output
        assert " | WARNING" not in output
        assert "fastembed" not in output.lower()
