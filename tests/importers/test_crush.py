"""Crush: its SQLite database as the first (April 2025) and the current schema lay it out."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers import registry
from importers.crush import CrushImporter

CLI = "crush:b7e4c1a2-3d5f-4e6a-8b9c-0d1e2f3a4b5c"
TASK = "crush:m-0003$$call_task_1"
TESTS = "crush:c8f5d2b3-4e6a-4f7b-9cad-1e2f3a4b5c6d"

# Crush's tables as its first migration made them, and the columns later migrations added.
FIRST_SCHEMA = [
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL, message_count INTEGER "
    "NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, "
    "cost REAL NOT NULL DEFAULT 0.0, updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL, parts TEXT NOT NULL "
    "default '[]', model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER)",
]
LATER_COLUMNS = [
    "ALTER TABLE sessions ADD COLUMN summary_message_id TEXT",
    "ALTER TABLE messages ADD COLUMN provider TEXT",
    "ALTER TABLE messages ADD COLUMN is_summary_message INTEGER DEFAULT 0 NOT NULL",
    "ALTER TABLE sessions ADD COLUMN todos TEXT",
]


def crush_database(fixtures: Path, target: Path, *, current: bool = True, rows_file: str = "rows.json") -> Path:
    rows = json.loads((fixtures / "crush" / rows_file).read_text())
    target.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(target)
    for statement in FIRST_SCHEMA + (LATER_COLUMNS if current else []):
        connection.execute(statement)
    for table in ("sessions", "messages"):
        for row in rows[table]:
            names = ", ".join(row)
            connection.execute(
                f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values())
            )
    connection.commit()
    connection.close()
    return target


@pytest.mark.parametrize("current", [True, False], ids=["2026 schema", "April 2025 schema"])
def test_crush_sessions_keep_the_conversation_its_tools_and_sub_agent_tasks(
    fixtures: Path, tmp_path: Path, read_all, current: bool
) -> None:
    database = crush_database(fixtures, tmp_path / "tool" / ".crush" / "crush.db", current=current)

    conversations, report = read_all(CrushImporter(), database)
    chats = {c.id: c for c in conversations}
    cli = chats[CLI]

    assert set(chats) == {CLI, TASK, TESTS}  # not Crush's own title request
    assert (cli.title, cli.project) == ("Port the CLI flags to cobra", str(tmp_path / "tool"))
    assert [(m.role, m.text) for m in cli.messages] == [
        ("user", "Port the flags in main.go to cobra\n\n[file /home/ana/src/tool/flags.png]"),
        ("assistant", "Let me find the flag definitions.\n\n[tool agent: Find every flag definition in the repo]"),
        ("tool", "[tool result: main.go defines --verbose, --out and --dry-run with the flag package.]"),
        ("assistant", "I'll replace them with cobra persistent flags.\n\n[tool edit: /home/ana/src/tool/main.go]"),
        ("tool", "[tool error: permission denied: main.go is read-only]"),
        ("assistant", "main.go is read-only; make it writable and I'll apply the change."),
    ]
    assert (cli.created_at, cli.updated_at) == (
        datetime(2025, 8, 1, 9, 20, tzinfo=UTC),
        datetime(2025, 8, 1, 9, 27, tzinfo=UTC),
    )
    assert chats[TASK].title == "Find every flag definition"
    assert chats[TESTS].title == "$ go test ./..."  # "Untitled Session" is Crush's placeholder
    assert [m.text for m in chats[TESTS].messages[:2]] == [
        "$ go test ./...",
        "[tool result: --- FAIL: TestParse (0.00s) (exit 1)]",
    ]
    assert [(s.where, s.reason) for s in report.skipped] == [
        ("crush.db, session d9a6e3c4-5f7b-4a8c-adbe-2f3a4b5c6d7e", "message x-0001 has unreadable parts")
    ]
    assert report.notes == ["ignored 1 part of unknown type 'hologram'"]


def test_crush_finds_each_project_it_ran_in_through_its_projects_list(fixtures: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "src" / "tool"
    database = crush_database(fixtures, project / ".crush" / "crush.db")
    registry_file = home / ".local/share/crush/projects.json"
    registry_file.parent.mkdir(parents=True)
    entry = {"path": str(project), "data_dir": ".crush", "last_accessed": "2026-06-20T09:00:00Z"}
    registry_file.write_text(json.dumps({"projects": [entry, {"path": "/gone", "data_dir": "/gone/.crush"}]}))

    assert CrushImporter().default_locations({}, home) == [database, Path("/gone/.crush/crush.db")]
    assert CrushImporter().default_locations({"CRUSH_GLOBAL_DATA": str(tmp_path / "none")}, home) == []
    assert registry.detect(project).name == "crush"


def test_crush_reimporting_a_database_adds_nothing(fixtures: Path, tmp_path: Path, import_fixture) -> None:
    database = crush_database(fixtures, tmp_path / "tool" / ".crush" / "crush.db")

    first = import_fixture(database)
    again = import_fixture(database, library=first.library)

    assert len(first.conversations) == 3
    assert "0 new, 0 updated, 3 unchanged" in again.summary


def test_crush_reads_a_pasted_text_as_the_users_words_and_leaves_inline_reasoning_out(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    # A long paste is kept as a `text/plain` binary part (paste_1.txt); a deepseek-r1 reply opens
    # with <think>…</think>.
    database = crush_database(fixtures, tmp_path / "app" / ".crush" / "crush.db", rows_file="paste-and-think.json")

    imported = import_fixture(database)

    [chat] = imported.conversations
    assert [(m.role, m.text) for m in chat.messages] == [
        (
            "user",
            'Traceback (most recent call last):\n  File "app.py", line 9, in <module>\n'
            "    main()\nKeyError: 'DATABASE_URL'",
        ),
        ("assistant", "DATABASE_URL is not set: export it, or add it to .env."),
    ]
    assert chat.title.startswith("Traceback (most recent call last)")
    assert imported.found("KeyError") == [chat.id]
    assert imported.found("Suggest") == []
