"""Sync and reindex for the agents that keep their chats in an editor's storage: found where the editor
keeps them, read again only when they change, and read back from the archive with the same projects."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from importers.sources.archive import Archive
from importers.sources.discovery import discover
from importers.sources.reindex import Reindexer
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.importers.sources.agent_home import FIXTURES

STORAGE = ".config/Code/User/globalStorage/saoudrizwan.claude-dev"
HEALTH = "cline:1754294400000"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "cline/Code/User/globalStorage/saoudrizwan.claude-dev", home / STORAGE)
    shutil.rmtree(home / STORAGE / "tasks" / "1754390000000")  # a task with no messages yet
    return home


@pytest.fixture
def library(tmp_path: Path):
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    yield library
    library.close()


def syncer(library: Library, home: Path) -> Syncer:
    return Syncer(library, env={}, home=home, formats=["cline"])


def test_sync_finds_cline_tasks_in_the_editors_storage_and_reads_only_what_changed(
    library: Library, home: Path
) -> None:
    first = syncer(library, home).run_once()
    assert (first.files_new, first.files_failed) == (3, [])
    assert library.get(HEALTH).project == "/home/ana/src/api"

    assert syncer(library, home).run_once().files_unchanged == 3

    messages = home / STORAGE / "tasks" / "1754294400000" / "ui_messages.json"
    data = json.loads(messages.read_text(encoding="utf-8"))
    data.append({"ts": 1754295000000, "type": "say", "say": "user_feedback", "text": "and log the sha at startup"})
    messages.write_text(json.dumps(data), encoding="utf-8")  # Cline writes the whole file again
    again = syncer(library, home).run_once()

    assert (again.files_edited, again.files_unchanged, again.conversations_updated) == (1, 2, 1)
    assert library.get(HEALTH).messages[-1].text == "and log the sha at startup"


def test_reindex_reads_cline_tasks_back_from_the_archive_with_their_projects(library: Library, home: Path) -> None:
    syncer(library, home).run_once()
    before = {c.id: (c.project, c.url, len(c.messages)) for c in library.iter_conversations()}
    archive = Archive(library.home)
    history = archive.path(archive.relative_for("cline", home / STORAGE / "state" / "taskHistory.json"))
    assert history.is_file()  # kept beside the copies: it names the tasks' workspaces
    shutil.rmtree(home)
    library.delete(list(before))

    report = Reindexer(library, home=home).run()

    assert report.files_failed == []
    assert {c.id: (c.project, c.url, len(c.messages)) for c in library.iter_conversations()} == before


def test_discovery_finds_each_editor_agent_in_its_own_place_once(home: Path) -> None:

    shutil.copytree(FIXTURES / "copilot-chat/Code/User", home / ".config/Code/User", dirs_exist_ok=True)
    roo = next((FIXTURES / "roo-code").rglob("rooveterinaryinc.roo-cline"))
    shutil.copytree(roo, home / ".config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline")
    shutil.copytree(FIXTURES / "cursor-agent/.cursor", home / ".cursor")

    found, problems = discover({}, home)

    formats: dict[str, int] = {}
    for source in found:
        formats[source.format] = formats.get(source.format, 0) + 1
    assert formats == {"cline": 3, "copilot-chat": 4, "roo-code": 2, "cursor-agent": 4}
    assert problems == []
