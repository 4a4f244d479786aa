"""Goose: its session files (before 1.10) and its database (1.10 and later, schema versions 0 and 5)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers import registry
from importers.goose import GooseFilesImporter, GooseImporter

NOTES = "goose:20250310_093000"
TOKIO = "goose:20251104_1"

# Goose's tables as its first database (1.10) made them, and the columns schema versions 2 to 5 added.
FIRST_SCHEMA = [
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '', working_dir TEXT NOT NULL, "
    "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
    "extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER, "
    "accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER, "
    "schedule_id TEXT, recipe_json TEXT)",
    "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), "
    "role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL, "
    "timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER)",
]
LATER_COLUMNS = [
    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
    "ALTER TABLE sessions ADD COLUMN user_recipe_values_json TEXT",
    "ALTER TABLE messages ADD COLUMN metadata_json TEXT",
    "ALTER TABLE sessions ADD COLUMN name TEXT DEFAULT ''",
    "ALTER TABLE sessions ADD COLUMN user_set_name BOOLEAN DEFAULT FALSE",
    "ALTER TABLE sessions ADD COLUMN session_type TEXT NOT NULL DEFAULT 'user'",
]


def goose_database(fixtures: Path, target: Path, *, current: bool = True) -> Path:
    rows = json.loads((fixtures / "goose/rows.json").read_text())
    connection = sqlite3.connect(target)
    for statement in FIRST_SCHEMA + (LATER_COLUMNS if current else []):
        connection.execute(statement)
    for table in ("sessions", "messages"):
        for row in rows[table]:
            if not current:  # schema 0: a session's name is its description; messages have no metadata
                row = {
                    k: v for k, v in row.items() if k not in {"name", "user_set_name", "session_type", "metadata_json"}
                }
                if table == "sessions":
                    row["description"] = row["description"] or next(
                        s["name"] for s in rows["sessions"] if s["id"] == row["id"]
                    )
            names = ", ".join(row)
            connection.execute(
                f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values())
            )
    connection.commit()
    connection.close()
    return target


def test_goose_session_files_keep_the_conversation_and_its_tools(fixtures: Path, read_all) -> None:
    conversations, report = read_all(GooseFilesImporter(), fixtures / "goose/sessions")
    chats = {c.id: c for c in conversations}
    notes = chats[NOTES]

    assert (notes.title, notes.project) == ("Tag notes by topic", "/home/ana/src/notes")
    assert [(m.role, m.text) for m in notes.messages] == [
        ("user", "Tag every note in notes/ by its topic"),
        ("assistant", "Listing the notes first.\n\n[tool developer__shell: ls notes/]"),
        ("tool", "[tool result: groceries.md rust-lifetimes.md]"),
        ("assistant", "Two notes: groceries.md is #home, rust-lifetimes.md is #rust."),
    ]
    assert (notes.created_at, notes.updated_at) == (
        datetime(2025, 3, 10, 9, 46, 40, tzinfo=UTC),
        datetime(2025, 3, 10, 9, 46, 49, tzinfo=UTC),
    )
    early = chats["goose:bash-flags"]
    assert early.title == "What does `set -euo pipefail` do?"
    assert early.messages[2].text == "[tool error: Execution failed: man: command not found]"
    assert "ignored 1 content item of unknown type 'hologram'" in report.notes


@pytest.mark.parametrize("current", [True, False], ids=["schema 5", "schema 0"])
def test_goose_database_sessions_leave_out_what_goose_hides(
    fixtures: Path, tmp_path: Path, read_all, current: bool
) -> None:
    database = goose_database(fixtures, tmp_path / "sessions.db", current=current)

    conversations, report = read_all(GooseImporter(), database)
    chats = {c.id: c for c in conversations}
    tokio = chats[TOKIO]

    assert (tokio.title, tokio.project) == ("Upgrade tokio to 1.48", "/home/ana/src/relay")
    assert tokio.created_at == datetime(2025, 11, 4, 8, 15, 2, 417000, tzinfo=UTC)
    texts = [m.text for m in tokio.messages]
    assert texts[2] == "[tool result: The file Cargo.toml has been edited.]"
    assert ("Summary of the conversation so far" in " ".join(texts)) is not current  # userVisible: false
    assert [(s.where, s.reason) for s in report.skipped] == [("sessions.db, session 20251104_2", "no messages")]


def test_goose_database_and_the_files_it_was_migrated_from_give_one_chat_each(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    sessions = tmp_path / "goose" / "sessions"
    shutil.copytree(fixtures / "goose/sessions", sessions)
    goose_database(fixtures, sessions / "sessions.db")

    first = import_fixture(sessions / "sessions.db")
    again = import_fixture(sessions, format="goose-files", library=first.library)

    assert registry.detect(sessions).name == "goose"
    assert "1 new, 0 updated, 1 unchanged" in again.summary  # the notes session is in both
    assert first.chat(NOTES) == again.chat(NOTES)


def test_goose_is_found_in_its_data_folder_on_each_os(tmp_path: Path) -> None:
    from importers.goose import session_folders

    home = tmp_path / "home"

    assert session_folders({}, home, "linux") == [home / ".local/share/goose/sessions"]
    assert session_folders({"APPDATA": "C:/Users/ana/AppData/Roaming"}, home, "win32") == [
        Path("C:/Users/ana/AppData/Roaming/Block/goose/data/sessions")
    ]
    assert session_folders({}, home, "darwin")[1] == home / "Library/Application Support/Block/goose/sessions"
    assert session_folders({"GOOSE_PATH_ROOT": "/opt/goose"}, home, "linux") == [Path("/opt/goose/data/sessions")]
