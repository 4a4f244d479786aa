"""Shared fixtures for importer tests: the committed fixture files, reading everything, zipping."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from importers.base import Importer, ImportReport
from importers.registry import without_opted_out
from importers.sources.report import SourceSummary
from server.services.importing import import_source, summary_text
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"

ReadAll = Callable[[Importer, Path], tuple[list[Conversation], ImportReport]]


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def read_all() -> ReadAll:
    def read(importer: Importer, path: Path) -> tuple[list[Conversation], ImportReport]:
        report = ImportReport(path=path)
        return list(importer.read(path, report)), report

    return read


@pytest.fixture
def zip_dir(tmp_path: Path) -> Callable[[Path, str], Path]:
    """Zip a fixture folder into tmp_path, optionally under a top folder (as some exports are)."""

    def make(source: Path, top: str = "") -> Path:
        target = tmp_path / f"{source.name}.zip"
        with zipfile.ZipFile(target, "w") as archive:
            for file in sorted(source.rglob("*")):
                if file.is_file():
                    archive.write(file, f"{top}{file.relative_to(source)}")
        return target

    return make


def build_vscdb(path: Path, tables: dict[str, dict[str, object] | None]) -> Path:
    """A Cursor-shaped SQLite file from `{table: {key: value}}`; values are stored as JSON text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    with connection:
        for table, rows in tables.items():
            if rows is None:
                continue
            connection.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            for key, value in rows.items():
                text = value if isinstance(value, str) else json.dumps(value)
                connection.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, text))
    connection.close()
    return path


@pytest.fixture
def cursor_user_dir(tmp_path: Path) -> Path:
    """A Cursor `User` folder: global composer storage plus one workspace with legacy chat tabs."""
    user = tmp_path / "Cursor" / "User"
    build_vscdb(user / "globalStorage" / "state.vscdb", json.loads((FIXTURES / "cursor" / "global.json").read_text()))
    workspace = user / "workspaceStorage" / "4f2a9c"
    build_vscdb(workspace / "state.vscdb", json.loads((FIXTURES / "cursor" / "workspace.json").read_text()))
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///home/ana/src/auth%20service"}))
    return user


# --- the real import path, for the real-shape tests ---------------------------------------------

SUMMARIES: list[str] = []


@dataclass
class Imported:
    """What `pastchats import` made of one fixture: the stored chats, the printed summary, a search."""

    library: Library
    conversations: list[Conversation]
    summary: str

    def found(self, phrase: str) -> list[str]:
        """Ids of the chats a keyword search for `phrase` returns."""
        return [chat.uri for chat in self.library.search(phrase, mode="keyword").chats]

    def chat(self, conversation_id: str) -> Conversation:
        return next(c for c in self.conversations if c.id == conversation_id)


ImportFixture = Callable[..., Imported]


@pytest.fixture
def import_fixture(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ImportFixture]:
    """Import a path as the CLI does (format detection, report, store) into a fresh library."""
    libraries: list[Library] = []

    def run(
        path: Path, format: str | None = None, importer: Importer | None = None, library: Library | None = None
    ) -> Imported:
        if library is None:  # a fresh store, unless the test imports into one it has already
            library = Library.open(tmp_path / f"store-{len(libraries)}", embedder=HashEmbedder())
            libraries.append(library)
        if importer is not None:  # a configured importer (a fixed time zone), read the same way
            report = ImportReport(path=path, format=importer.name)
            stats = library.import_conversations(without_opted_out(importer.read(path, report), report))
            summary = SourceSummary(path=path.name, format=importer.name, notes=list(report.notes))
            summary.conversations_skipped += report.skipped
            summary.record(stats)
        else:
            summary = import_source(library, path, format, show_progress=False, label=path.name)
        text = summary_text([summary])
        SUMMARIES.append(f"{request.node.name}:\n  " + text.replace("\n", "\n  "))
        return Imported(library, sorted(library.iter_conversations(), key=lambda c: c.created_at), text)

    yield run
    for library in libraries:
        library.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Show what each real-shape fixture's import said, ignored record types included."""
    if SUMMARIES:
        terminalreporter.section("import summaries of the real-shape fixtures")
        for text in SUMMARIES:
            terminalreporter.write_line(text)
