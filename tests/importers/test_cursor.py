from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from importers.cursor import CursorImporter, default_locations

IMPORTER = CursorImporter()


def test_cursor_composer_bubbles_come_in_header_order_with_roles_and_times(cursor_user_dir: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, cursor_user_dir / "globalStorage" / "state.vscdb")
    chat = next(c for c in conversations if c.id == "cursor:comp-1111")

    assert chat.source == "cursor"
    assert chat.title == "Refactor auth middleware"
    assert [(m.id, m.role) for m in chat.messages] == [("b-1", "user"), ("b-2", "assistant"), ("b-3", "assistant")]
    assert chat.messages[1].text == "[tool read_file: src/auth.ts]"
    assert "HIDDEN-THOUGHT" not in " ".join(m.text for m in chat.messages)
    assert chat.created_at == datetime(2025, 1, 1, 10, 0, tzinfo=UTC)
    assert chat.updated_at == datetime(2025, 1, 1, 10, 10, tzinfo=UTC)


def test_cursor_global_composers_get_their_workspace_folder_as_project(cursor_user_dir: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, cursor_user_dir / "globalStorage" / "state.vscdb")
    by_id = {c.id: c for c in conversations}

    assert by_id["cursor:comp-1111"].project == "/home/ana/src/auth service"
    assert by_id["cursor:comp-old"].project is None


def test_cursor_older_inline_composers_and_chat_tabs_import(cursor_user_dir: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, cursor_user_dir)
    by_id = {c.id: c for c in conversations}

    assert [m.text for m in by_id["cursor:comp-old"].messages] == [
        "Inline conversation from an older Cursor",
        "Older composers kept bubbles inline.",
    ]
    tab = by_id["cursor:tab-77"]
    assert tab.title == "Regex for ISO dates"
    assert [m.role for m in tab.messages] == ["user", "assistant"]
    assert tab.messages[1].text == "Use \\d{4}-\\d{2}-\\d{2}."
    assert tab.project == "/home/ana/src/auth service"


def test_cursor_missing_bodies_empty_and_broken_composers_are_reported(cursor_user_dir: Path, read_all) -> None:
    _, report = read_all(IMPORTER, cursor_user_dir)
    reasons = {s.where.rsplit(" ", 1)[-1]: s.reason for s in report.skipped}

    assert reasons["comp-empty"] == "no messages"
    assert reasons["comp-broken"] == "composer data is not a JSON object"
    assert reasons["#2"] == "no messages"
    assert any("no stored body" in note for note in report.notes)


def test_cursor_reads_a_database_that_another_process_holds_locked(cursor_user_dir: Path, read_all) -> None:
    database = cursor_user_dir / "globalStorage" / "state.vscdb"
    holder = sqlite3.connect(database)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        conversations, _ = read_all(IMPORTER, database)
    finally:
        holder.rollback()
        holder.close()

    assert "cursor:comp-1111" in {c.id for c in conversations}


def test_cursor_never_writes_to_the_database(cursor_user_dir: Path, read_all) -> None:
    database = cursor_user_dir / "globalStorage" / "state.vscdb"
    before = database.read_bytes()

    read_all(IMPORTER, cursor_user_dir)

    assert database.read_bytes() == before


def test_cursor_default_locations_follow_the_platform() -> None:
    home = Path("/home/ana")

    assert default_locations({}, home, "linux")[0] == home / ".config/Cursor/User/globalStorage/state.vscdb"
    assert default_locations({"XDG_CONFIG_HOME": "/x"}, home, "linux")[1] == Path("/x/Cursor/User/workspaceStorage")
    assert default_locations({}, home, "darwin")[0].parts[3:6] == ("Library", "Application Support", "Cursor")
    assert default_locations({"APPDATA": "C:/Users/ana/AppData/Roaming"}, home, "win32")[0] == Path(
        "C:/Users/ana/AppData/Roaming/Cursor/User/globalStorage/state.vscdb"
    )
