"""OpenCode: the database of 1.2 and later, the JSON files of 0.4 to 1.1, and files OpenCode wrote itself."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.opencode import OpenCodeFilesImporter, OpenCodeImporter

REAL_DB = "opencode/real-1.18/opencode.db"  # written by `opencode run` 1.18.33 against a local mock model
REAL_FILES = "opencode/real-1.1/storage"  # written by `opencode run` 1.1.65
SHOP = "opencode:ses_6a1f0c2b3ffeA1b2C3d4E5f6G7"
CHILD = "opencode:ses_6a1f0a00cffeChildSession01"


def database_from_storage(storage: Path, schema_from: Path, target: Path) -> Path:
    """An `opencode.db` holding a `storage/` folder's sessions, laid out as OpenCode 1.2's own
    migration lays them out (ids from the file names, the rest of each record as `data`), in the
    schema of a database OpenCode wrote."""
    source = sqlite3.connect(schema_from)
    statements = [
        row[0] for row in source.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql NOT NULL")
    ]
    source.close()
    connection = sqlite3.connect(target)
    for statement in statements:
        connection.execute(statement)
    for file in sorted((storage / "session").glob("*/*.json")):
        try:
            info = json.loads(file.read_text())
        except ValueError:
            continue  # OpenCode's migration skips what it cannot read, and so does this
        times = info.get("time", {})
        connection.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, "
            "time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file.stem, file.parent.name, info.get("parentID"), info.get("slug", ""), info.get("directory", ""),
             info.get("title", ""), info.get("version", ""), times.get("created"), times.get("updated")),
        )  # fmt: skip
        for message_file in sorted((storage / "message" / file.stem).glob("*.json")):
            try:
                message = json.loads(message_file.read_text())
            except ValueError:
                continue
            created = message.get("time", {}).get("created")
            data = {k: v for k, v in message.items() if k not in {"id", "sessionID"}}
            connection.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (message_file.stem, file.stem, created, created, json.dumps(data)),
            )
            for part_file in sorted((storage / "part" / message_file.stem).glob("*.json")):
                part = {
                    k: v
                    for k, v in json.loads(part_file.read_text()).items()
                    if k not in {"id", "sessionID", "messageID"}
                }
                connection.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (part_file.stem, message_file.stem, file.stem, created, created, json.dumps(part)),
                )
    connection.commit()
    connection.close()
    return target


def test_opencode_reads_the_database_opencode_1_18_wrote(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / REAL_DB)
    [chat] = imported.conversations

    assert chat.id == "opencode:ses_dde362bd1ffeT9Z2GzCHL505h7"
    assert (chat.source, chat.title, chat.project) == (
        "opencode",
        "Rate limiter token bucket",
        "/tmp/oc2/home/src/ratelimit",
    )
    assert [m.role for m in chat.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert chat.messages[3].text == "[tool glob: *.md]"
    assert chat.messages[4].text == "[tool error: ripgrep execution failed]"
    assert chat.created_at == datetime(2026, 11, 28, 10, 53, 24, 910000, tzinfo=UTC)
    assert imported.found("sliding window") == [chat.id]
    assert "opencode" in imported.summary


def test_opencode_reads_the_json_files_opencode_1_1_wrote(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / REAL_FILES)
    [chat] = imported.conversations

    assert (chat.id, chat.title, chat.project) == (
        "opencode:ses_dde34c2d8ffe11a568Ot3KjPKy",
        "Rate limiter token bucket",
        "/tmp/oc3/home/src/atlas",
    )
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert chat.messages[-1].text == "There is one markdown file: README.md."


def test_opencode_keeps_what_was_typed_and_said_and_leaves_out_what_opencode_added(fixtures: Path, read_all) -> None:
    conversations, report = read_all(OpenCodeFilesImporter(), fixtures / "opencode/shapes/storage")
    chats = {c.id: c for c in conversations}
    shop = chats[SHOP]

    assert shop.title == "Fix the flaky checkout test"
    assert shop.project == "/home/ana/src/shop"
    assert shop.messages[0].text == (
        "The checkout test fails one run in five, see @tests/checkout.test.ts\n\n[file tests/checkout.test.ts]"
    )
    assert "races the clock" not in " ".join(m.text for m in shop.messages)  # reasoning
    assert shop.messages[1].text.splitlines()[-1] == "[tool task: Where is the coupon applied?]"
    assert [m.text for m in shop.messages if m.role == "tool"] == [
        "[tool result: FAIL tests/checkout.test.ts > applies the coupon before tax "
        "AssertionError: expected 90 to be 81]",
        "[tool result: src/cart/coupon.ts applies it after tax.]",
        "[tool error: File was modified since it was last read]",
    ]
    assert (shop.created_at, shop.updated_at) == (
        datetime(2025, 10, 9, 8, 55, tzinfo=UTC),
        datetime(2025, 10, 9, 9, 1, tzinfo=UTC),
    )
    assert chats[CHILD].title == "Find the checkout test (@explore subagent)"
    assert {s.where.rsplit("/", 1)[-1]: s.reason for s in report.skipped} == {
        "ses_6a1e00000ffeBrokenSession01.json": (
            "not valid JSON (Unterminated string starting at: line 1 column 108 (char 107))"
        ),
        "ses_6a1d00000ffeEmptySession001.json": "no messages",
    }
    assert "ses_6a1f0c2b3ffeA1b2C3d4E5f6G7: 1 unreadable message file(s) skipped" in report.notes
    assert "ignored 1 part of unknown type 'hologram'" in report.notes


def test_opencode_database_and_files_give_the_same_chats(fixtures: Path, tmp_path: Path, read_all) -> None:
    storage = fixtures / "opencode/shapes/storage"
    database = database_from_storage(storage, fixtures / REAL_DB, tmp_path / "opencode.db")

    from_files, _ = read_all(OpenCodeFilesImporter(), storage)
    from_database, report = read_all(OpenCodeImporter(), database)

    assert sorted(from_database, key=lambda c: c.id) == sorted(from_files, key=lambda c: c.id)
    assert [(s.where, s.reason) for s in report.skipped] == [
        ("opencode.db, session ses_6a1d00000ffeEmptySession001", "no messages")
    ]


def test_opencode_data_folder_with_both_stores_imports_each_session_once(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    data = tmp_path / "opencode"
    shutil.copytree(fixtures / "opencode/shapes/storage", data / "storage")
    database_from_storage(data / "storage", fixtures / REAL_DB, data / "opencode.db")

    first = import_fixture(data)  # the database, as OpenCode 1.2 reads it
    again = import_fixture(data / "storage", library=first.library)  # the files it was migrated from

    assert registry.detect(data).name == "opencode"
    assert registry.detect(data / "storage").name == "opencode-files"
    assert {c.id for c in first.conversations} == {SHOP, CHILD}
    assert "0 new, 0 updated, 2 unchanged" in again.summary


def test_opencode_is_found_in_xdg_data_home_or_the_local_share_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"

    assert OpenCodeImporter().default_locations({}, home) == [home / ".local/share/opencode"]
    assert OpenCodeFilesImporter().default_locations({"XDG_DATA_HOME": "~/data"}, home) == [
        home / "data/opencode/storage"
    ]


def test_opencode_files_sync_keeps_each_sessions_messages_and_parts_with_it(fixtures: Path) -> None:
    session = next((fixtures / "opencode/real-1.1/storage/session").glob("*/*.json"))

    context = OpenCodeFilesImporter().context_files(session)

    assert len([f for f in context if f.parent.parent.name == "message"]) == 5
    assert len([f for f in context if f.parent.parent.name == "part"]) == 11
