"""`forget` killed at any point: the chats are either untouched or gone as soon as the store is opened
again (by any command, with or without the model), and a forgotten chat never comes back through sync."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from importers.sources.sync_state import SyncState
from storage.embedding.embedder import HashEmbedder
from storage.errors import NotFound
from storage.library import Library
from storage.reads.listing import recent_page
from storage.stores.catalog import Catalog
from tests.importers.sources.agent_home import AgentHome, make_agent_home, write_session
from tests.storage.test_crash_and_concurrency import assert_consistent

ROOT = Path(__file__).resolve().parents[3]
TRIALS = 8


def start_forget(store: Path) -> subprocess.Popen[str]:
    script = str(ROOT / "tests" / "importers" / "sources" / "forget_process.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, script, str(store)], env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def journal_written(store: Path) -> bool:
    return (store / "journal.json").exists()


def forgotten_saved(store: Path) -> bool:
    return bool(SyncState.load(store).forgotten)


def versions(store: Path) -> int:
    """Commits to the conversations table so far (a forget's first row removal adds one)."""
    return len(list((store / "lancedb" / "conversations.lance" / "_versions").iterdir()))


def kill_at(process: subprocess.Popen[str], store: Path, moment: float | Callable[[Path], bool]) -> None:
    """SIGKILL after `moment` seconds, or as soon as `moment(store)` holds (polled without pause)."""
    if callable(moment):
        deadline = time.monotonic() + 240
        while process.poll() is None and not moment(store) and time.monotonic() < deadline:
            pass
    else:
        time.sleep(moment)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def stored_ids(library: Library) -> set[str]:
    return set(library.store.conversation_ids())


def findable(library: Library, ids: set[str]) -> set[str]:
    """The chats among `ids` that search (either leg's units), recent or read can still show."""
    seen = {unit.conversation_id for unit in library.search_units("question answer shop detail", limit=1000)}
    seen |= {chat.uri for chat in library.search("question about the shop", max_results=10).chats}
    before = None
    while True:
        page = library.recent(n=20, before=before)
        seen |= {chat.uri for chat in page.chats}
        if page.next_before is None:
            break
        before = page.next_before
    with Catalog.read(library.home) as catalog:  # what `pastchats recent` and `stats` read when current
        if catalog is not None:
            seen |= {
                chat.uri
                for chat in recent_page(catalog, n=20, sort_order="desc", before=None, after=None, project=None).chats
            }
    for cid in ids:
        try:
            library.read_chat(cid)
        except NotFound:
            continue
        seen.add(cid)
    return seen & ids


@pytest.mark.integration
def test_forget_killed_at_any_point_never_lets_sync_bring_the_chats_back(tmp_path: Path) -> None:
    agents = make_agent_home(tmp_path)
    for i in range(40):
        session = f"5e55e000-2222-4000-8000-{i:012d}"
        write_session(agents.path(f".claude/projects/-home-ana-src-p{i % 4}/{session}.jsonl"), session,
                      [f"question {i} about the shop", f"answer {i} " + "detail " * 40])  # fmt: skip
    agents.syncer().run_once()
    pristine = tmp_path / "pristine"
    shutil.copytree(agents.library.home, pristine)
    assert not journal_written(pristine)
    before = versions(pristine)
    claude = {cid for cid in stored_ids(agents.library) if cid.startswith("claude-code:")}
    assert len(claude) > 40

    # How long an uninterrupted forget takes here (once the store is open), to spread the kills over it.
    timed = tmp_path / "timed"
    shutil.copytree(pristine, timed)
    process = start_forget(timed)
    started = time.monotonic()
    assert process.wait(timeout=240) == 0
    duration = time.monotonic() - started

    # Killed at moments spread over the forget, and right after each of its commits: the store's
    # journal naming the ids, the sync state forgetting them, the first rows going from LanceDB.
    moments: list[float | Callable[[Path], bool]] = [duration * trial / TRIALS for trial in range(TRIALS)]
    moments += [journal_written, forgotten_saved, lambda store: versions(store) > before]
    outcomes = []
    for trial, moment in enumerate(moments):
        store = tmp_path / f"trial{trial}"
        shutil.copytree(pristine, store)
        process = start_forget(store)
        kill_at(process, store, moment)

        # Restarted as a command that loads no model would: the interrupted forget is finished on open.
        reopened = Library.open(store, load_model=False)
        committed = bool(reopened.unfinished_deletes()) or bool(SyncState.load(store).forgotten)
        shown = findable(reopened, claude)
        assert shown in (set(), claude), f"trial {trial}: {len(shown)} of {len(claude)} chats still findable"
        assert not (committed and shown), f"trial {trial}: a committed forget left chats findable"
        assert_consistent(reopened)

        library = Library.open(store, embedder=HashEmbedder())
        AgentHome(agents.home, library).syncer().run_once()
        state = SyncState.load(store)
        present, forgotten = stored_ids(library), set(state.forgotten)
        assert not present & forgotten, f"trial {trial}: forgotten chats are back"
        assert not state.deleting
        assert not library.unfinished_deletes()
        assert forgotten == (claude if not shown else set()), f"trial {trial}: forgotten only in part"
        assert findable(library, claude) == shown, f"trial {trial}: sync changed what is findable"
        assert_consistent(library)
        library.search("shop")
        library.stats()
        outcomes.append("forgotten" if forgotten else "untouched")
    assert "forgotten" in outcomes, outcomes
