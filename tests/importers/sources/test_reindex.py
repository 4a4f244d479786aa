"""`pastchats reindex`: the store rebuilt from the archive has the chats the original files gave."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from importers.aider import HISTORY_FILE
from importers.sources.privacy import delete
from importers.sources.reindex import Reindexer, archived_files
from importers.sources.sync_state import STATE_FILE
from storage.models import Conversation
from tests.importers.sources.agent_home import FIXTURES, AgentHome, make_agent_home

QUEUED = "claude-code:7b3e9c10-2f4a-4c1d-9e8b-5a6f7d8e9f01"


@pytest.fixture
def agents(tmp_path: Path) -> AgentHome:
    agents = make_agent_home(tmp_path)
    shutil.copytree(FIXTURES / "claude-code-2.1" / "projects", agents.home / ".claude" / "projects", dirs_exist_ok=True)
    shutil.rmtree(agents.home / ".gemini")
    shutil.copytree(FIXTURES / "gemini-home" / ".gemini", agents.home / ".gemini")
    repo = agents.home / "code" / "ratelimit"
    repo.mkdir(parents=True)
    shutil.copy(FIXTURES / "aider" / "interrupted" / HISTORY_FILE, repo / HISTORY_FILE)
    return agents


def synced(agents: AgentHome) -> dict[str, Conversation]:
    report = agents.syncer(extra_paths=(agents.home / "code" / "ratelimit",)).run_once()
    assert report.files_failed == []
    return {c.id: c for c in agents.library.iter_conversations()}


def emptied_store_and_sources(agents: AgentHome) -> None:
    """What reindex is for: the agents deleted their logs, and the store is to be built again."""
    shutil.rmtree(agents.home)
    agents.library.delete([c.id for c in agents.library.iter_conversations()])
    assert agents.library.is_empty()


def shape(chats: dict[str, Conversation]) -> dict[str, tuple[str | None, str | None, str, int]]:
    return {cid: (c.url, c.project, c.title, len(c.messages)) for cid, c in chats.items()}


def test_reindex_rebuilds_the_chats_with_the_originals_links_and_projects(agents: AgentHome) -> None:
    before = synced(agents)
    emptied_store_and_sources(agents)

    report = Reindexer(agents.library, home=agents.home).run()

    after = {c.id: c for c in agents.library.iter_conversations()}
    assert report.not_run is None
    assert report.files_failed == []
    assert shape(after) == shape(before)
    assert (
        after[QUEUED].url == (agents.home / ".claude/projects/-home-ana-src-invoices" / f"{QUEUED[12:]}.jsonl").as_uri()
    )
    assert {c.project for c in after.values() if c.source == "gemini"} >= {"/home/ana/src/weather"}
    assert not [c for c in after.values() if c.url and "/archive/" in c.url]
    assert f"{report.conversations_new} new" in report.text()


def test_reindex_without_the_sync_state_reads_the_originals_path_from_the_archive(agents: AgentHome) -> None:
    before = synced(agents)
    emptied_store_and_sources(agents)
    (agents.library.home / STATE_FILE).unlink()

    Reindexer(agents.library, home=agents.home).run()

    assert shape({c.id: c for c in agents.library.iter_conversations()}) == shape(before)


def test_reindex_keeps_deleted_chats_deleted_and_changes_nothing_the_second_time(agents: AgentHome) -> None:
    before = synced(agents)
    delete(agents.library, [QUEUED])

    first = Reindexer(agents.library, home=agents.home).run()
    again = Reindexer(agents.library, home=agents.home).run()

    assert QUEUED not in {c.id for c in agents.library.iter_conversations()}
    assert first.conversations_new == 0
    assert (again.conversations_new, again.conversations_updated) == (0, 0)
    assert again.conversations_unchanged == len(before) - 1
    assert len(archived_files(agents.library.home)) == first.files_read


def test_reindex_reports_what_the_importers_ignored(agents: AgentHome) -> None:
    synced(agents)

    report = Reindexer(agents.library, home=agents.home).run()

    assert any(note.endswith("ignored 1 record of unknown type 'future-kind'") for note in report.notes)


def test_sync_keeps_the_files_that_name_projects_beside_the_copies_and_reports_what_was_ignored(
    agents: AgentHome,
) -> None:
    report = agents.syncer().run_once()

    archive = agents.library.home / "archive" / "gemini"
    kept = {
        path.relative_to(archive).as_posix().split("/.gemini/", 1)[1] for path in archive.rglob("*") if path.is_file()
    }
    assert {"projects.json", "tmp/weather/.project_root", "tmp/atlas/.project_root"} <= kept
    assert any(note.endswith("ignored 1 record of unknown type 'checkpoint'") for note in report.notes)
    assert "note: " in report.text()
