"""Every file and folder the `pastchats` command creates is its user's alone, whatever umask it is
started with: LanceDB's and Tantivy's files, the catalog, the archive of agent logs, the model cache's
derived files, logs and exports. A store made before that is tightened by the first command that opens
it, which says so once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.importers.sources.agent_home import FIXTURES
from tests.storage.helpers import loosen

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    pytest.mark.skipif(os.name == "nt", reason="Windows keeps the store private by its folder's ACL"),
]

SAMPLE = Path(__file__).resolve().parents[2] / "importers" / "sample" / "sample_chats.jsonl"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """Commands start from the umask most users have (0o022), which would make files readable by all."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def machine(tmp_path: Path, model_cache_dir: Path) -> dict[str, str]:
    """A user with agent logs in their home, the model in a shared cache, and no pastchats files yet."""
    user = tmp_path / "user"
    shutil.copytree(FIXTURES / "claude-code" / "projects", user / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex", user / ".codex")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PASTCHATS_")}
    return env | {
        "PASTCHATS_HOME": str(tmp_path / "store"),
        "PASTCHATS_USER_HOME": str(user),
        "PASTCHATS_AGENT_ENV": "{}",
        "PASTCHATS_SYNC": "false",
        "FASTEMBED_CACHE_PATH": str(model_cache_dir),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # pastchats' own cache: the derived int8 model goes here
    }


def pastchats(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done


def open_to_others(*roots: Path) -> list[str]:
    return [
        f"{path} {oct(stat.S_IMODE(path.lstat().st_mode))}"
        for root in roots
        for path in [root, *root.rglob("*")]
        if stat.S_IMODE(path.lstat().st_mode) & 0o077
    ]


async def test_import_sync_serve_and_export_create_nothing_other_users_can_read(
    tmp_path: Path, model_cache_dir: Path, permissive_umask: None
) -> None:
    env = machine(tmp_path, model_cache_dir)
    home, cache, logs = Path(env["PASTCHATS_HOME"]), tmp_path / "cache" / "pastchats", tmp_path / "logs"
    outputs = [
        pastchats(env, "import", str(SAMPLE)),
        pastchats(env, "sync"),
    ]
    served = env | {"PASTCHATS_LOG_FILE": str(logs / "pastchats.log")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "-v", "serve"], env=served)
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("conversation_search", {"query": "houseplant yellow leaves"})
    assert not result.is_error
    outputs.append(pastchats(env, "export", "--out", str(tmp_path / "chats.jsonl")))

    # What is walked holds what the native code and every part of pastchats wrote.
    assert any((home / "lancedb").rglob("*.lance"))
    assert any(path.name == "meta.json" for path in (home / "keyword").iterdir())
    assert (home / "catalog.sqlite").is_file()
    assert (home / "sync-state.json").is_file()
    assert any(path.is_file() for path in (home / "archive").rglob("*"))
    assert any(cache.rglob("*.onnx")), "the import derived its int8 document model in pastchats' own cache"
    assert (logs / "pastchats.log").stat().st_size > 0
    assert open_to_others(home, cache, logs, tmp_path / "chats.jsonl") == []
    # Born owner-only, not tightened afterwards: no command found anything to tighten.
    assert [done.stderr for done in outputs if "owner-only" in done.stderr] == []
    assert "owner-only" not in (logs / "pastchats.log").read_text(encoding="utf-8")


def test_a_store_others_could_read_is_tightened_by_the_next_command_which_says_so_once(
    tmp_path: Path, model_cache_dir: Path, permissive_umask: None
) -> None:
    env = machine(tmp_path, model_cache_dir)
    home = Path(env["PASTCHATS_HOME"])
    pastchats(env, "import", str(SAMPLE))
    loosen(home)  # as pastchats left a store before it kept it owner-only

    first = pastchats(env, "stats")
    notes = [line for line in first.stderr.splitlines() if "owner-only" in line]
    assert len(notes) == 1
    assert f"made the store in {home} owner-only" in notes[0]
    assert open_to_others(home) == []
    second = pastchats(env, "stats")
    assert "owner-only" not in second.stderr
