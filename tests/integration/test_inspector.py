"""A third-party client: the MCP Inspector CLI (Node) lists and calls our tools over stdio."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.server.processes import build_real_store, serve_command

INSPECTOR = Path(__file__).parent / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not INSPECTOR.exists(),
        reason="the MCP Inspector is not installed: run `npm ci --prefix tests/integration` (CI does)",
    ),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> Path:
    return build_real_store(tmp_path_factory.mktemp("store"), model_cache_dir)


def inspect(home: Path, model_cache_dir: Path, scratch: Path, *method: str) -> Any:
    # The Inspector passes the server only the variables given with -e, so the model cache goes there.
    command = [str(INSPECTOR), "--cli", "-e", f"FASTEMBED_CACHE_PATH={model_cache_dir}", *serve_command(home, "serve")]
    env = {**os.environ, "HOME": str(scratch)}  # the Inspector keeps a catalog file in $HOME
    done = subprocess.run([*command, *method], capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_the_three_tools(home: Path, model_cache_dir: Path, tmp_path: Path) -> None:
    listed = inspect(home, model_cache_dir, tmp_path, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert list(tools) == ["conversation_search", "recent_chats", "read_chat"]
    assert tools["conversation_search"]["annotations"]["readOnlyHint"] is True
    assert "outputSchema" in tools["recent_chats"]


def test_the_inspector_calls_conversation_search(home: Path, model_cache_dir: Path, tmp_path: Path) -> None:
    called = inspect(
        home,
        model_cache_dir,
        tmp_path,
        *("--method", "tools/call", "--tool-name", "conversation_search"),
        *("--tool-arg", "query=jellyfin reverse proxy", "max_results=1"),
    )
    assert called.get("isError") in (None, False), called
    assert called["content"][0]["text"].startswith("<chat uri='nginx'")
    assert called["structuredContent"]["chats"][0]["title"] == "Nginx setup"
