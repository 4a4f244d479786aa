"""The server's read path: no LanceDB while the derived files are current, the model loaded beside the
store, and the store's model followed when another process re-embeds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from server.app import build_server
from server.services.opening import open_store
from server.settings import Settings
from storage.embedding.embedder import Embedder, FastEmbedder, HashEmbedder
from storage.library import Library
from tests.conftest import REPO_ROOT
from tests.server.processes import CHATS
from tests.tools.helpers import BASE, chat

pytestmark = pytest.mark.anyio

# A server in a process of its own, talked to by the in-memory MCP client; one search per stdin line,
# each answered with the result's text and whether the process has imported lancedb by then.
SERVER_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from mcp import Client
from server.app import build_server
from server.settings import Settings

async def main() -> None:
    async with Client(build_server(Settings(home=Path(sys.argv[1])))) as client:
        for line in sys.stdin:
            result = await client.call_tool("conversation_search", {"query": line.strip()})
            text = "".join(getattr(part, "text", "") for part in result.content)
            answer = {"text": text, "error": result.is_error, "lancedb": "lancedb" in sys.modules}
            print(json.dumps(answer), flush=True)

asyncio.run(main())
"""

LATE = chat(
    "zeppelin",
    ["Where should the zeppelin hangar go on the blueprint?", "Put the hangar north of the mast."],
    title="Zeppelin hangar",
    updated=BASE + timedelta(days=2),
)


@pytest.fixture
def real_store(tmp_path: Path, model_cache_dir: Path) -> Iterator[Library]:
    library = Library.open(tmp_path / "store", cache_dir=model_cache_dir)
    assert library.load_error is None, library.load_error
    library.import_conversations(CHATS)
    yield library
    library.close()


class ServerProcess:
    def __init__(self, home: Path, model_cache_dir: Path, user_home: Path):
        env = {
            "HOME": str(user_home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "FASTEMBED_CACHE_PATH": str(model_cache_dir),
            "PASTCHATS_SYNC": "false",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER_SCRIPT, str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )

    def search(self, query: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(query + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the server process ended"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def test_a_server_on_a_current_store_searches_without_lancedb_and_still_finds_chats_written_since(
    real_store: Library, model_cache_dir: Path, tmp_path: Path
) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    server = ServerProcess(real_store.home, model_cache_dir, user_home)
    try:
        first = server.search("nginx reverse proxy for jellyfin")
        assert not first["error"], first["text"]
        assert "Nginx setup" in first["text"]
        assert "keyword-only" not in first["text"]
        assert first["lancedb"] is False

        # Another process writes a chat (its catalog row with it, as every write does) and leaves its
        # passages to the change log (no matrix rebuild yet).
        with real_store.writing(timeout=10):
            versions = {LATE.id: LATE.fingerprint()}
            real_store.lock.begin([LATE.id])
            real_store.store.write_conversations([LATE], versions)
            real_store.ingestor().derive([LATE], versions)
            real_store.lock.done([LATE.id])
        assert real_store.store.matrix.needs_build(int(real_store.store.chunks.version)) is False

        late = server.search("zeppelin hangar blueprint")
        assert not late["error"], late["text"]
        assert "Zeppelin hangar" in late["text"]
        assert "keyword-only" not in late["text"]
        assert late["lancedb"] is True  # the changed chat's rows come from LanceDB, opened on that need
    finally:
        server.close()


def _server_pid(command: str) -> int:
    """The stdio client's server process: a child of this one running `command`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if parent == str(os.getpid()) and command.encode() in cmdline:
            return int(entry.name)
    raise AssertionError(f"no child process runs {command}")


def _resident_kb(pid: int, suffix: str) -> int | None:
    """Resident kB of the process's mappings of files named `*suffix`; None if it maps none."""
    total: int | None = None
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and not parts[0].endswith(":"):
            inside = len(parts) > 5 and parts[5].endswith(suffix)
        elif inside and parts[0] == "Rss:":
            total = (total or 0) + int(parts[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the server's mappings from /proc")
async def test_pastchats_serve_over_stdio_answers_a_search_without_loading_lancedb(
    real_store: Library, model_cache_dir: Path, tmp_path: Path
) -> None:
    pastchats = str(Path(sys.executable).parent / "pastchats")
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PASTCHATS_HOME": str(real_store.home),
        "FASTEMBED_CACHE_PATH": str(model_cache_dir),
    }  # background sync on, as installed: it finds no agent logs in this empty home
    async with Client(StdioServerParameters(command=pastchats, args=["serve"], env=env)) as client:
        result = await client.call_tool("conversation_search", {"query": "sourdough starter smells of acetone"})
        assert not result.is_error
        assert "sourdough starter" in "".join(getattr(part, "text", "") for part in result.content)
        await client.call_tool("recent_chats", {"n": 5})
        assert not (await client.call_tool("read_chat", {"uri": "bread"})).is_error
        pid = _server_pid(pastchats)
        maps = Path(f"/proc/{pid}/maps").read_text()
        # The float16 rows a search rescores are read with pread: through the map, every search's rows
        # brought their neighbours too, and after a few searches the whole file (137 MB at 100k).
        assert _resident_kb(pid, ".f16") == 0
    assert "onnxruntime" in maps  # the model is loaded: the search was hybrid
    assert "lancedb" not in maps  # LanceDB's native library was never loaded


def test_a_store_left_by_a_crashed_write_is_repaired_before_serving(real_store: Library) -> None:
    assert Library.open(real_store.home, embedder=real_store.embedder, heal=False).needs_repair() is False
    real_store.lock.begin(["nginx"])  # as a writer killed mid-way leaves the journal
    reopened = Library.open(real_store.home, embedder=real_store.embedder, heal=False)
    assert reopened.needs_repair() is True
    reopened.repair()
    assert reopened.needs_repair() is False


def test_a_lost_keyword_index_or_another_model_needs_repair(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder(32)).import_conversations(CHATS)
    assert Library.open(home, embedder=HashEmbedder(48), heal=False).needs_repair() is True
    for path in (home / "keyword").iterdir():
        path.unlink()
    assert Library.open(home, embedder=HashEmbedder(32), heal=False).needs_repair() is True


async def test_a_running_server_follows_the_store_to_the_model_it_was_re_embedded_with(
    real_store: Library, model_cache_dir: Path
) -> None:
    loaded: list[str] = []

    def load(name: str) -> Embedder:
        loaded.append(name)
        # Only one real model is installed here: the test model stands in for the second one.
        return HashEmbedder(32) if name == HashEmbedder(32).model_name else FastEmbedder(name, model_cache_dir)

    def serving(settings: Settings) -> Library:
        library = open_store(settings, "search")  # the server's own path, with the real model
        library.follow_store_model(load)
        return library

    settings = Settings(home=real_store.home, model_cache=model_cache_dir, sync=False)
    async with Client(build_server(settings, serving)) as client:
        before = await client.call_tool("conversation_search", {"query": "sourdough starter smells"})
        assert not before.is_error
        assert loaded == []

        # What `pastchats model use` does in its own process: every passage re-embedded with another model.
        Library.open(real_store.home, load_model=False).switch_model(HashEmbedder(32))

        after = await client.call_tool("conversation_search", {"query": "sourdough starter smells"})
        text = "".join(getattr(part, "text", "") for part in after.content)
        assert not after.is_error, text
        assert loaded == ["test/hash-32"]
        assert "sourdough" in text.lower()
        assert "keyword-only" not in text


# A CLI command in a process of its own, then the heavy libraries that process imported (stderr).
CLI_SCRIPT = """
import sys
from server.cli import main
sys.argv[0] = "pastchats"
try:
    main()
finally:
    heavy = ("numpy", "pyarrow", "lancedb", "onnxruntime", "fastembed")
    print(" ".join(name for name in heavy if name in sys.modules) or "-", file=sys.stderr)
"""


def _cli(home: Path, user_home: Path, *args: str) -> tuple[str, set[str]]:
    env = {"HOME": str(user_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PASTCHATS_SYNC": "false"}
    done = subprocess.run(
        [sys.executable, "-c", CLI_SCRIPT, "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, set(done.stderr.split()[-1].split()) - {"-"}


def test_stats_recent_and_read_on_a_current_store_import_no_numpy_pyarrow_or_lancedb(tmp_path: Path) -> None:
    """Their start-up budget (docs/ARCHITECTURE.md): the catalog answers them, so a store that needs
    no repair is read without the vectors' libraries; one that does is repaired first, as before."""
    home, user_home = tmp_path / "store", tmp_path / "user"
    user_home.mkdir()
    Library.open(home, embedder=HashEmbedder(32)).import_conversations(CHATS)

    stats, loaded = _cli(home, user_home, "stats")
    assert "Chats: 2 " in stats
    assert loaded == set()
    recent, loaded = _cli(home, user_home, "recent")
    assert "Nginx setup" in recent
    assert loaded == set()
    read, loaded = _cli(home, user_home, "read", "nginx")
    assert "proxy_pass" in read
    assert loaded == set()

    Library.open(home, embedder=HashEmbedder(32), heal=False).lock.begin(["nginx"])  # a writer killed mid-way
    stats, loaded = _cli(home, user_home, "stats")
    assert "Chats: 2 " in stats
    assert "lancedb" in loaded  # opening repaired what the crashed write left before reading
