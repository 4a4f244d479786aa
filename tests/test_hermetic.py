"""The test run keeps to a home of its own, and the guard refuses what would touch the home it guards."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from importers.registry import AGENT_VARIABLES
from tests.hermetic import SYSTEM_FOLDERS, HomeGuard


def test_the_run_has_a_home_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = tmp_path_factory.getbasetemp()
    assert Path.home().is_relative_to(run)
    for name in ("HOME", "USERPROFILE", "XDG_CACHE_HOME", *SYSTEM_FOLDERS, *AGENT_VARIABLES):
        assert Path(os.environ[name]).is_relative_to(run), name
    assert os.environ["PASTCHATS_SYNC"] == "false"


def test_the_guard_refuses_and_records_every_touch_of_the_home_it_guards(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    (home / ".claude" / "projects" / "s.jsonl").write_text("{}\n")
    (home / "allowed").mkdir()
    guard = HomeGuard(guarded=[str(home)], allowed=[str(home / "allowed")])
    guard.start()
    try:
        with pytest.raises(PermissionError, match="touched the real home"):
            (home / ".claude" / "projects" / "s.jsonl").read_text()
        with pytest.raises(PermissionError):
            os.listdir(home / ".claude" / "projects")
        with pytest.raises(PermissionError):
            (home / "new.txt").write_text("x")
        with pytest.raises(PermissionError):
            sqlite3.connect(home / "state.db")
        (home / "allowed" / "cache.bin").write_bytes(b"x")
        (tmp_path / "beside.txt").write_text("x")
    finally:
        guard.stop()
    touched = [entry.split("\n", 1)[0] for entry in guard.touched_since(0)]
    assert touched == [
        f"open {home}/.claude/projects/s.jsonl",
        f"os.listdir {home}/.claude/projects",
        f"open {home}/new.txt",
        f"sqlite3.connect {home}/state.db",
    ]
