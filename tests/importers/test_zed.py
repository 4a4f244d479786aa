"""Zed's agent threads: the threads table as first made and as it is now, zstd and JSON rows, both agents' shapes."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard

from importers import registry
from importers.zed import ZedImporter, data_folder

BLAME = "zed:9b1f2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
ROPE = "zed:4a3b2c1d-0e9f-4a8b-9c7d-6e5f4a3b2c1d"

FIRST_TABLE = "CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL, data_type TEXT NOT NULL, data BLOB NOT NULL)"  # noqa: E501
LATER_COLUMNS = [
    "ALTER TABLE threads ADD COLUMN parent_id TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths_order TEXT",
    "ALTER TABLE threads ADD COLUMN created_at TEXT",
]


def zed_database(fixtures: Path, target: Path, *, current: bool = True) -> Path:
    """A `threads.db` holding the fixture's threads, compressed as Zed compresses them (zstd level 3)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(target)
    for statement in [FIRST_TABLE, *(LATER_COLUMNS if current else [])]:
        connection.execute(statement)
    for row in json.loads((fixtures / "zed/threads.json").read_text()):
        if "thread" in row:
            data = json.dumps(row.pop("thread")).encode()
            data = zstandard.ZstdCompressor(level=3).compress(data) if row["data_type"] == "zstd" else data
        else:
            data = base64.b64decode(row.pop("raw"))
        row["data"] = data
        if not current:
            row = {k: v for k, v in row.items() if k in {"id", "summary", "updated_at", "data_type", "data"}}
        names = ", ".join(row)
        connection.execute(f"INSERT INTO threads ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    connection.commit()
    connection.close()
    return target


@pytest.mark.parametrize("current", [True, False], ids=["2026 table", "first table"])
def test_zed_threads_keep_the_conversation_of_both_agents(
    fixtures: Path, tmp_path: Path, read_all, current: bool
) -> None:
    database = zed_database(fixtures, tmp_path / "threads" / "threads.db", current=current)

    conversations, report = read_all(ZedImporter(), database)
    chats = {c.id: c for c in conversations}
    blame, rope = chats[BLAME], chats[ROPE]

    assert blame.title == "Fix the gutter blame overlap"
    assert [(m.role, m.text) for m in blame.messages] == [
        (
            "user",
            "The inline blame overlaps the gutter in [@editor.rs](file:///home/ana/src/editor/src/editor.rs)\n[image]",
        ),
        ("assistant", 'Let me look at how the blame is laid out.\n\n[tool grep: {"regex": "render_blame"}]'),
        ("tool", "[tool result: src/editor.rs:812: fn render_blame(]"),
        ("assistant", "The blame starts at x = 0; offset it by the gutter width."),
    ]
    assert blame.updated_at == datetime(2026, 2, 11, 16, 42, 10, 512000, tzinfo=UTC)
    assert blame.project == ("/home/ana/src/editor" if current else None)
    assert blame.created_at == (datetime(2026, 2, 11, 16, 30, tzinfo=UTC) if current else blame.updated_at)
    assert [(m.role, m.text) for m in rope.messages] == [
        ("user", "How does Zed's rope store text?"),
        (
            "assistant",
            "As a SumTree of 128-byte chunks, each summarising its line and UTF-16 counts.\n\n"
            "[tool read_file: crates/rope/src/rope.rs]",
        ),
        ("tool", "[tool error: crates/rope/src/rope.rs: no such file]"),
    ]
    assert [s.reason.split(" (")[0] for s in report.skipped] == [
        "its data cannot be decompressed",
        "unknown data type 'brotli'",
    ]
    assert report.notes == ["ignored 1 message of unknown kind 'Surprise'"]


def test_zed_threads_reimport_adds_nothing(fixtures: Path, tmp_path: Path, import_fixture) -> None:
    database = zed_database(fixtures, tmp_path / "threads" / "threads.db")

    first = import_fixture(database)
    again = import_fixture(tmp_path / "threads", library=first.library)

    assert registry.detect(tmp_path / "threads").name == "zed"
    assert "0 new, 0 updated, 2 unchanged" in again.summary


def test_zed_is_found_in_its_data_folder_on_each_os(tmp_path: Path) -> None:
    home = tmp_path / "home"

    assert data_folder({}, home, "linux") == home / ".local/share/zed"
    assert data_folder({}, home, "darwin") == home / "Library/Application Support/Zed"
    assert data_folder({"LOCALAPPDATA": "C:/Users/ana/AppData/Local"}, home, "win32") == Path(
        "C:/Users/ana/AppData/Local/Zed"
    )
