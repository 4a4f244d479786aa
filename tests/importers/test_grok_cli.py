"""Grok CLI: `~/.grok/grok.db` of schema 3 (with a compaction, a background notice, an image, a row
that is not JSON and a session opened with nothing said) and of schema 1 (1.0)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.grok_cli import GrokCliImporter
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

CURRENT = "grok-cli/.grok/grok.db"
RECONNECT = "grok-cli:a1b2c3d4e5f6"


def test_grok_cli_sessions_read_as_said_without_notices_or_reasoning(fixtures: Path, read_all) -> None:
    conversations, report = read_all(GrokCliImporter(), fixtures / CURRENT)
    chats = {c.id: c for c in conversations}
    reconnect = chats[RECONNECT]

    assert (reconnect.title, reconnect.project) == ("Flaky reconnect test", "/home/sam/src/chat")
    assert (reconnect.created_at, reconnect.updated_at) == (
        datetime(2026, 6, 2, 10, 0, tzinfo=UTC),
        datetime(2026, 6, 2, 10, 5, 21, tzinfo=UTC),
    )
    assert [(m.role, m.text) for m in reconnect.messages] == [
        ("user", "test_reconnect fails one run in five"),
        (
            "assistant",
            "Let me run it in a loop.\n\n"
            "[tool bash: for i in $(seq 10); do pytest tests/test_ws.py -k reconnect -q; done]",
        ),
        ("tool", "[tool result: 2 failed, 8 passed]"),
        ("assistant", "[tool edit_file: chat/ws.py]"),
        ("tool", "[tool error: old_str not found in chat/ws.py]"),
        ("assistant", "The retry timer fires before `close()` finishes; waiting on `_closed` fixes it."),
        ("user", "[image]\n\nand this trace? /home/sam/shots/trace.png"),
        ("assistant", "Same race: the second connect starts before the first socket closed."),
    ]
    assert reconnect.messages[0].created_at == datetime(2026, 6, 2, 10, 0, 5, 120000, tzinfo=UTC)
    text = " ".join(m.text for m in reconnect.messages)
    for left_out in ("race between close", "Background delegation", "a loop showed 2 of 10"):
        assert left_out not in text  # reasoning, Grok's notice, the compaction summary

    rerere = chats["grok-cli:5c6d7e8f9a0b"]  # untitled; one row not JSON
    assert rerere.title == "what does `git rerere` do?"
    assert [m.role for m in rerere.messages] == ["user", "assistant"]

    assert len(chats) == 2  # the session opened with nothing said is no chat
    assert [(s.where, s.reason) for s in report.skipped] == [("grok.db, session 7e8f9a0b1c2d", "no messages")]
    assert report.notes == ["some Grok CLI messages were not JSON objects and were left out"]


def test_grok_cli_1_0_database_reads_the_same(fixtures: Path, read_all) -> None:
    conversations, report = read_all(GrokCliImporter(), fixtures / "grok-cli-1.0")
    (branch,) = conversations
    assert (branch.id, branch.title, branch.project) == ("grok-cli:b2c3d4e5f6a7", "Rename branch", "/home/sam/notes")
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    assert report.skipped == []


def test_grok_cli_is_found_in_its_home_on_every_os(fixtures: Path, tmp_path: Path) -> None:
    importer = GrokCliImporter()
    for platform in ("linux", "darwin", "win32"):
        assert importer.default_locations({}, tmp_path, platform) == [tmp_path / ".grok" / "grok.db"]
    for path in ("grok-cli", "grok-cli/.grok", CURRENT):
        assert registry.detect(fixtures / path).name == "grok-cli"
    not_grok = tmp_path / "grok.db"
    sqlite3.connect(not_grok).execute("CREATE TABLE notes (body TEXT)").connection.close()
    conversations, report = registry.read(not_grok, "grok-cli")
    assert list(conversations) == []
    assert [s.reason for s in report.skipped] == ["not a Grok CLI database (no messages or sessions table)"]


def test_sync_reads_grok_clis_database_again_when_a_turn_is_added(fixtures: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    database = home / ".grok" / "grok.db"
    database.parent.mkdir(parents=True)
    shutil.copy(fixtures / CURRENT, database)
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        first = Syncer(library, env={}, home=home, formats=["grok-cli"]).run_once()
        assert (first.files_new, first.conversations_new) == (1, 2)
        assert Syncer(library, env={}, home=home, formats=["grok-cli"]).run_once().files_unchanged == 1

        connection = sqlite3.connect(database)
        with connection:
            connection.execute(
                "INSERT INTO messages VALUES (?, 10, 'user', ?, '2026-06-02T10:09:00.000Z')",
                (RECONNECT[len("grok-cli:") :], json.dumps({"role": "user", "content": "ship it"})),
            )
        connection.close()
        again = Syncer(library, env={}, home=home, formats=["grok-cli"]).run_once()
        assert (again.conversations_new, again.conversations_updated) == (0, 1)
        assert library.get(RECONNECT).messages[-1].text == "ship it"
    finally:
        library.close()
