"""`forget` killed at any point: the chats are either untouched or forgotten, and a forgotten chat never
comes back through sync."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from importers.sources.sync_state import SyncState
from storage.embedder import HashEmbedder
from storage.library import Library
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


def stored_ids(library: Library) -> set[str]:
    return set(library.store.conversation_ids())


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
    claude = {cid for cid in stored_ids(agents.library) if cid.startswith("claude-code:")}
    assert len(claude) > 40

    # How long an uninterrupted forget takes here, to spread the kills over it.
    timed = tmp_path / "timed"
    shutil.copytree(pristine, timed)
    started = time.monotonic()
    process = start_forget(timed)
    assert process.wait(timeout=240) == 0
    duration = time.monotonic() - started

    outcomes = []
    for trial in range(TRIALS):
        store = tmp_path / f"trial{trial}"
        shutil.copytree(pristine, store)
        process = start_forget(store)
        time.sleep(duration * trial / TRIALS)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()

        library = Library.open(store, embedder=HashEmbedder())
        AgentHome(agents.home, library).syncer().run_once()
        state = SyncState.load(store)
        present, forgotten = stored_ids(library), set(state.forgotten)
        assert not present & forgotten, f"trial {trial}: forgotten chats are back"
        assert not state.deleting
        assert forgotten in (set(), claude), f"trial {trial}: forgotten only in part"
        assert (claude <= present) == (not forgotten)
        assert_consistent(library)
        library.search("shop")
        library.stats()
        outcomes.append("forgotten" if forgotten else "untouched")
    assert "forgotten" in outcomes, outcomes
