"""The quick `pastchats delete` and `forget` (server/cli_delete.py): the click commands' output and exit
status without loading LanceDB, the chats gone from every reader the moment the command returns, and
the removal finished in the background (or, if that process dies, by whoever opens the store next)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from importers.sources.sync_state import SyncState
from storage import lean_lock
from storage.catalog import Catalog
from storage.filters import Filters
from storage.library import Library
from storage.locks import WriteLock
from tests.importers.sources.agent_home import CODEX, SHOP, SHOP_FILE, make_agent_home

ROOT = Path(__file__).resolve().parents[2]

RUN = """
import sys
sys.argv[0] = "pastchats"
try:
    if {full!r}:
        from server.cli_commands import cli
        cli.main(sys.argv[1:], prog_name="pastchats")
    else:
        from server.cli import main
        main()
except SystemExit as exit:
    code = exit.code
print("\\nLOADED " + " ".join(m for m in ("lancedb", "filelock", "pydantic") if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def minimal_env(tmp: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp),
        "PYTHONPATH": str(ROOT),
        "PASTCHATS_SYNC": "false",
    }


def run(home: Path, args: list[str], *, full: bool = False) -> tuple[str, str, int, set[str]]:
    """(stdout, stderr, exit status, heavy modules loaded) of `pastchats --home HOME ARGS`."""
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(full=full), "--home", str(home), *args],
        env=minimal_env(home.parent),
        capture_output=True,
        stdin=subprocess.DEVNULL,  # `forget` without --yes asks, and reads no answer
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    stderr, _, loaded = done.stderr.rpartition("\nLOADED")
    return done.stdout, stderr, done.returncode, set(loaded.split())


def wait_finished(home: Path) -> None:
    """Until no delete is committed and unfinished, and whoever finished it has let go of the lock."""
    deadline = time.monotonic() + 120
    while (home / "journal.json").exists():
        assert time.monotonic() < deadline, (home / "journal.json").read_text()
        time.sleep(0.05)
    fd = lean_lock.acquire(str(home))
    assert fd is not None
    lean_lock.release(fd)


def finisher_pids(home: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"server.cli_delete" in command and str(home).encode() in command:
            found.append(int(entry.name))
    return found


def rows_of(home: Path) -> set[str]:
    """Every chat id LanceDB (chats, passages), Tantivy and the catalog hold, opened without
    repairing anything (Tantivy's passages are counted against LanceDB's)."""
    library = Library.open(home, load_model=False, heal=False)
    store = library.store
    ids = set(store.conversation_ids(None))
    for table in (store.chunks,):
        ids |= set(table.search().select(["conversation_id"]).limit(None).to_arrow().column(0).to_pylist())
    assert library.keywords.doc_count() == store.chunk_count()
    with Catalog.read(home) as catalog:
        if catalog is not None:
            ids |= {cid for _, cid in catalog.timeline(Filters())}
    return ids


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store synced from agent logs: chats in several projects and sources, with archive copies."""
    agents = make_agent_home(tmp_path_factory.mktemp("agents"))
    agents.syncer().run_once()
    home = agents.library.home
    run(home, ["stats"], full=True)  # the catalog current, as after any command
    return home


def copy_of(store: Path, where: Path) -> Path:
    shutil.copytree(store, where, symlinks=True)
    return where


CASES = [
    ["delete", SHOP],
    ["delete", SHOP, CODEX, "--json"],
    ["delete", SHOP, "claude-code:no-such-chat"],
    ["delete", "--json", "no-such-chat", SHOP, SHOP],
    ["delete", "no-such-chat"],
    ["delete", "--json", "no-such-chat"],
    ["forget", "--project", "/home/ana/src/shop", "--yes"],
    ["forget", "--source", "codex", "--yes", "--json"],
    ["forget", "--before", "2100-01-01", "--yes"],
    ["forget", "--before", "2000-01-01T00:00Z", "--yes", "--json"],
    ["forget", "--project", "/home/ana/src/shop", "--source", "claude-code", "--before", "2100-01-01", "--yes"],
    ["forget", "--project", "no-such-project", "--yes"],
]


@pytest.mark.parametrize("args", CASES)
def test_the_quick_delete_prints_what_the_click_command_prints_and_leaves_the_same_store(
    synced: Path, tmp_path: Path, args: list[str]
) -> None:
    quick, full = copy_of(synced, tmp_path / "quick" / "store"), copy_of(synced, tmp_path / "full" / "store")
    *answered, loaded = run(quick, args)
    *expected, _ = run(full, args, full=True)
    assert answered == expected
    assert not loaded & {"lancedb", "filelock"}, loaded
    wait_finished(quick)
    assert rows_of(quick) == rows_of(full)
    assert SyncState.load(quick).forgotten == SyncState.load(full).forgotten
    archived = [sorted(p.name for p in (store / "archive").rglob("*")) for store in (quick, full)]
    assert archived[0] == archived[1]
    # and the catalog is current again: the lean readers answer, as the click group does
    for reader in (["stats"], ["recent", "-n", "20"]):
        out, err, status, loaded = run(quick, reader)
        want, err_wanted, status_wanted, _ = run(full, reader, full=True)
        # stats' first line names the store and its size on disk (the finisher also prunes old versions)
        assert (out.split("\n")[reader == ["stats"] :], err, status) == (
            want.split("\n")[reader == ["stats"] :],
            err_wanted,
            status_wanted,
        )
        assert "lancedb" not in loaded


def test_a_store_named_by_a_relative_path_is_finished_too(synced: Path, tmp_path: Path) -> None:
    home = copy_of(synced, tmp_path / "store")
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(full=False), "--home", "store", "delete", CODEX],
        env=minimal_env(tmp_path),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "lancedb" not in done.stderr.rpartition("\nLOADED")[2]
    wait_finished(home)
    assert CODEX not in rows_of(home)


def test_a_forget_that_would_ask_first_is_left_to_the_click_command(synced: Path, tmp_path: Path) -> None:
    home = copy_of(synced, tmp_path / "store")
    _, err, status, loaded = run(home, ["forget", "--source", "codex"])
    assert status == 1
    assert "Aborted" in err  # click.confirm read no answer from the closed stdin
    assert "lancedb" in loaded
    assert CODEX in rows_of(home)


def test_a_committed_delete_is_hidden_from_every_reader_until_it_is_finished(synced: Path, tmp_path: Path) -> None:
    home = copy_of(synced, tmp_path / "store")
    holder = WriteLock(home)  # the finisher waits for this lock, as it would for an import or a server
    with holder.hold():
        thread = threading.Thread(target=lambda: results.append(run(home, ["delete", SHOP])))
        results: list[tuple[str, str, int, set[str]]] = []
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive()  # the quick delete waits for the lock as the click command does
    thread.join(60)
    assert results[0][2] == 0
    with holder.hold():  # taken before the finisher (which needs ~1 s to import LanceDB) takes it
        assert json.loads((home / "journal.json").read_text())["deleting"] == [SHOP]
        for args in (["stats"], ["recent", "-n", "20"], ["export"], ["read", SHOP]):
            out = run(home, args)[0]
            assert f"{SHOP}'" not in out, args  # (a subagent's uri extends it)
            assert f'{SHOP}"' not in out, args
        _, err, status, _ = run(home, ["read", SHOP])
        assert status == 1
        assert "no chat with uri" in err
        library = Library.open(home, load_model=False, heal=False)
        assert SHOP in set(library.store.conversation_ids(None))  # the rows are still there
        assert SHOP not in [c.uri for c in library.recent(n=20).chats]
        assert SHOP not in {c.id for c in library.iter_conversations()}
    wait_finished(home)
    assert SHOP not in rows_of(home)
    assert SHOP in SyncState.load(home).forgotten
    assert not (home / "archive" / SHOP_FILE).exists()


def test_a_finisher_killed_before_it_finished_is_finished_by_the_next_command(synced: Path, tmp_path: Path) -> None:
    home = copy_of(synced, tmp_path / "store")
    holder = WriteLock(home)
    assert run(home, ["delete", CODEX])[2] == 0
    with holder.hold():
        pids = finisher_pids(home)
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert (home / "journal.json").exists()
    out, _, status, _ = run(home, ["recent", "-n", "20"])  # opens the store, which finishes the delete
    assert status == 0
    assert f"{CODEX}'" not in out
    assert CODEX not in rows_of(home)
    run(home, ["delete", "no-such-chat"], full=True)  # takes storage's list into the sync state's
    assert CODEX in SyncState.load(home).forgotten


@pytest.mark.anyio
@pytest.mark.integration
async def test_a_running_stdio_server_stops_showing_a_chat_the_moment_it_is_deleted(
    tmp_path: Path, model_cache_dir: Path
) -> None:
    from mcp import Client, StdioServerParameters

    from tests.server.processes import build_real_store, serve_command
    from tests.tools.helpers import block_uris, text_of

    home = build_real_store(tmp_path / "store", model_cache_dir)
    command = serve_command(home, "serve")
    env = minimal_env(tmp_path) | {"FASTEMBED_CACHE_PATH": str(model_cache_dir)}
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))

    async def shown(client: Client) -> tuple[bool, list[str], bool]:
        """Whether search finds nginx, what recent lists, whether nginx can be read."""
        found = await client.call_tool("conversation_search", {"query": "reverse proxy for my media server"})
        recent = await client.call_tool("recent_chats", {"n": 5})
        read = await client.call_tool("read_chat", {"uri": "nginx"})
        return "nginx" in block_uris(text_of(found)), block_uris(text_of(recent)), not read.is_error

    async with Client(params, mode="legacy") as client:
        assert await shown(client) == (True, ["nginx", "bread"], True)
        out, _, status, loaded = run(home, ["delete", "nginx"])
        assert (out, status) == ("Deleted 1 chat(s) from every index and the archive.\n", 0)
        assert "lancedb" not in loaded
        with WriteLock(home).hold():  # the finisher waits: the rows are all still there
            assert (home / "journal.json").exists()
            assert await shown(client) == (False, ["bread"], False)
        wait_finished(home)
        assert await shown(client) == (False, ["bread"], False)
    assert "nginx" not in rows_of(home)
