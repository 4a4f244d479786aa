"""Sync over odd folders: a busy project folder is looked through once per sync, not once per session;
an unreadable session or folder is reported, once; a source rewritten shorter loses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.sync_scale import PROJECT, write_sessions
from importers import claude_code
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library


@pytest.fixture
def library(tmp_path: Path) -> Library:
    opened = Library.open(tmp_path / "store", embedder=HashEmbedder())
    yield opened
    opened.close()


def test_a_busy_project_folder_is_looked_through_once_per_sync(
    tmp_path: Path, library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    write_sessions(home, 120, 4)
    looked: list[Path] = []
    original = claude_code._folder_summaries

    def counted(folder: Path) -> dict[str, str]:
        looked.append(folder)
        return original(folder)

    monkeypatch.setattr(claude_code, "_folder_summaries", counted)
    report = Syncer(library, env={}, home=home, formats=["claude-code"]).run_once(embed=False)

    assert report.conversations_new == 120
    assert looked == [home / ".claude" / "projects" / PROJECT]
    # Titles still come from the summaries other sessions hold.
    second = library.get("claude-code:5e55e000-0000-4000-8000-000000000001")
    assert second.title == "Session 1 summed up"
