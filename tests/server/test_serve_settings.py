"""`pastchats serve` over stdio reads its settings as every command does (flags over environment over
defaults): a setting it cannot read stops it with its words, before anything is answered."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.server.processes import build_real_store, serve_command, server_env

pytestmark = pytest.mark.timeout(300)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    return build_real_store(tmp_path_factory.mktemp("serve-settings") / "store", model_cache_dir)


def first_search(home: Path, env: dict[str, str], *flags: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    """One search sent with `initialize`, as a client's first call; once it is answered (or the server
    has ended), stdin ends, and the server with it."""
    search = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    search["params"] = {"name": "conversation_search", "arguments": {"query": "nginx reverse proxy"}}
    lines = "".join(json.dumps(message) + "\n" for message in (INITIALIZE, INITIALIZED, search))
    args = serve_command(home, *flags)
    process = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(lines)
    process.stdin.flush()
    output = []
    for line in process.stdout:
        output.append(line)
        if json.loads(line).get("id") == 1:
            break
    stdout, stderr = process.communicate(timeout=240)
    done = subprocess.CompletedProcess(args, process.returncode, "".join(output) + stdout, stderr)
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    return done, replies.get(1)


def test_the_flags_win_over_the_environment_and_the_environment_over_the_defaults(
    home: Path, model_cache_dir: Path, tmp_path: Path
) -> None:
    env = server_env(model_cache_dir, PASTCHATS_HOME=str(tmp_path / "not-this-one"))
    env["PASTCHATS_OUTPUT_BUDGET_CHARS"] = "1000"  # the default is 12,000
    done, reply = first_search(home, env, "serve")  # --home given: the flag
    assert done.returncode == 0, done.stderr
    assert reply["result"]["structuredContent"]["chats"][0]["uri"] == "nginx"
    assert len(reply["result"]["content"][0]["text"]) <= 1000
    assert not (tmp_path / "not-this-one").exists()


def test_a_list_setting_goes_through_the_full_reader_and_still_serves(home: Path, model_cache_dir: Path) -> None:
    env = server_env(model_cache_dir, PASTCHATS_EXCLUDE_PROJECTS='["work*"]')
    done, reply = first_search(home, env, "serve")
    assert done.returncode == 0, done.stderr
    assert reply["result"]["structuredContent"]["chats"][0]["uri"] == "nginx"


def test_a_setting_the_full_reader_refuses_stops_serve_with_its_words(home: Path, model_cache_dir: Path) -> None:
    env = server_env(model_cache_dir, PASTCHATS_OUTPUT_BUDGET_CHARS="lots")
    done, reply = first_search(home, env, "serve")
    assert done.returncode == 1
    assert "invalid setting: output_budget_chars" in done.stderr
    assert reply is None
