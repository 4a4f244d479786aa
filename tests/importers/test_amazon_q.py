"""Amazon Q Developer CLI and Kiro CLI: `data.sqlite3` as their migrations lay it out, with the
conversation states `q chat` 1.10 to 1.15 and Kiro CLI wrote."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from importers import registry
from importers.amazon_q import AmazonQImporter, KiroCliImporter, local_data

# The tables as `q chat`'s migrations 004 and 007 create them, and the one Kiro CLI adds.
SCHEMA = [
    "CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB)",
    "CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)",
]
KIRO_SCHEMA = [
    "CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL, value TEXT NOT NULL, "
    "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (key, conversation_id))"
]


def amazon_q_database(fixtures: Path, target: Path, rows: str = "amazon-q/rows.json") -> Path:
    """The database from a fixture's rows."""
    return write_amazon_q_database(json.loads((fixtures / rows).read_text()), target)


def write_amazon_q_database(tables: dict[str, list[dict[str, Any]]], target: Path) -> Path:
    """The database holding `tables`' rows; a conversation state is stored as serde_json writes it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(target)
    for statement in SCHEMA + (KIRO_SCHEMA if "conversations_v2" in tables else []):
        connection.execute(statement)
    for table, entries in tables.items():
        for row in entries:
            values = [
                v if isinstance(v, str | int | bytes) else json.dumps(v, separators=(",", ":")) for v in row.values()
            ]
            connection.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", values)
    connection.commit()
    connection.close()
    return target


def test_q_chat_conversations_keep_prompts_answers_and_tools_but_not_the_added_context(
    fixtures: Path, tmp_path: Path, read_all
) -> None:
    database = amazon_q_database(fixtures, tmp_path / "amazon-q" / "data.sqlite3")

    conversations, report = read_all(AmazonQImporter(), database)
    chats = {c.id: c for c in conversations}
    shop = chats["amazon-q:3c9f1b2e-7a4d-4e8b-9c1f-2d3e4f5a6b7c"]

    assert shop.project == "/home/ana/src/shop"
    assert shop.title == "why does the checkout total drop the shipping fee?"
    assert [(m.role, m.text) for m in shop.messages] == [
        ("user", "why does the checkout total drop the shipping fee?"),
        ("assistant", "Let me read the checkout code.\n\n[tool fs_read: {\"operations\": [{\"mode\": \"Line\", "
         "\"path\": \"/home/ana/src/shop/checkout.py\"}]}]"),
        ("tool", "[tool result: def total(cart): return sum(item.price for item in cart.items)]"),
        ("assistant", "`total` sums the items only; add `cart.shipping` to the sum."),
        ("user", "run the tests"),
        ("assistant", "[tool execute_bash: pytest -q]"),
        ("tool", '[tool error: {"exit_status": "1", "stdout": "1 failed, 12 passed", "stderr": ""}]'),
        ("assistant", "One test fails: test_shipping_free_over_50."),
    ]  # fmt: skip
    assert not any("CONTEXT ENTRY" in m.text or "pytest -q." in m.text for m in shop.messages)
    assert shop.created_at == datetime(2025, 8, 5, 9, 12, 3, 412000, tzinfo=UTC)
    assert shop.updated_at == datetime(2025, 8, 5, 9, 14, 49, tzinfo=UTC)

    api = chats["amazon-q:b1e2d3c4-5f60-4a7b-8c9d-0e1f2a3b4c5d"]  # 1.10: pairs, no times
    assert [(m.role, m.text) for m in api.messages] == [
        ("user", "add a /health endpoint to the flask app"),
        ("assistant", "I'll add the route.\n\n[tool fs_write: append]"),
        ("user", "no, put it in routes.py instead"),
        ("tool", "[tool error: Tool use was cancelled by the user]"),
        ("assistant", "Understood: the route goes in routes.py."),
    ]
    assert api.project == "/home/ana/src/api"
    assert api.created_at == datetime.fromtimestamp(database.stat().st_mtime, UTC)

    notes = chats["amazon-q:e5f6a7b8-9c0d-4e1f-a2b3-c4d5e6f7a8b9"]  # 1.15: a local offset
    assert notes.created_at == datetime(2025, 9, 2, 9, 0, 0, 250000, tzinfo=UTC)

    cleared = chats["amazon-q:9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"]  # after /clear: the transcript
    assert [(m.role, m.text) for m in cleared.messages] == [
        ("user", "why is the terraform plan\nrecreating the bucket?"),
        ("assistant", "The bucket name is computed from a timestamp, so every plan sees a new name.\n\n[tool fs_read]"),
        ("user", "pin it then"),
        ("assistant", "Pinned it to `var.bucket_name`.\n\n[tool fs_write]\n\n[tool execute_bash]"),
    ]
    assert cleared.project == "/home/ana/infra"

    assert len(chats) == 4
    assert sorted(skip.reason for skip in report.skipped) == [
        "no messages",
        "not a conversation (no conversation_id)",
    ]


def test_kiro_cli_reads_its_own_table_and_the_old_one_once(fixtures: Path, tmp_path: Path, read_all) -> None:
    database = amazon_q_database(fixtures, tmp_path / "kiro-cli" / "data.sqlite3", "amazon-q/kiro-rows.json")

    conversations, report = read_all(KiroCliImporter(), database)

    assert [c.id for c in conversations] == [
        "kiro-cli:4d0a2c3f-8b5e-4f9c-8d20-3e4f5a6b7c8d",
        "kiro-cli:6f1b3d40-9c6f-4a0d-9e31-4f5a6b7c8d9e",
    ]
    first, second = conversations
    assert {first.project, second.project} == {"/home/ana/src/shop"}
    assert first.created_at == datetime(2025, 8, 5, 9, 12, 3, tzinfo=UTC)  # the row's own times
    assert second.title == "what does the retry decorator do on a 429?"
    assert second.messages[0].created_at == datetime(2026, 1, 14, 21, 20, 5, tzinfo=UTC)
    assert report.skipped == []


def test_each_cli_is_found_in_the_local_data_folder_of_every_platform(tmp_path: Path) -> None:
    home = tmp_path
    assert local_data({}, home, "linux") == home / ".local/share"
    assert local_data({"XDG_DATA_HOME": "/data"}, home, "linux") == Path("/data")
    assert local_data({}, home, "darwin") == home / "Library/Application Support"
    assert local_data({"LOCALAPPDATA": "D:\\Local"}, home, "win32") == Path("D:\\Local")
    assert local_data({}, home, "win32") == home / "AppData/Local"
    env = {"XDG_DATA_HOME": str(tmp_path / "share")}
    assert AmazonQImporter().default_locations(env, home) == [tmp_path / "share/amazon-q/data.sqlite3"]
    assert KiroCliImporter().default_locations(env, home) == [tmp_path / "share/kiro-cli/data.sqlite3"]


def test_the_registry_tells_the_two_databases_apart(fixtures: Path, tmp_path: Path) -> None:
    q = amazon_q_database(fixtures, tmp_path / "share" / "amazon-q" / "data.sqlite3")
    kiro = amazon_q_database(fixtures, tmp_path / "share" / "kiro-cli" / "data.sqlite3", "amazon-q/kiro-rows.json")

    assert registry.detect(q).name == "amazon-q"
    assert registry.detect(q.parent).name == "amazon-q"
    assert registry.detect(kiro).name == "kiro-cli"
    assert registry.detect(kiro.parent).name == "kiro-cli"


def test_a_database_without_the_conversations_table_is_reported(tmp_path: Path, read_all) -> None:
    database = tmp_path / "amazon-q" / "data.sqlite3"
    database.parent.mkdir()
    connection = sqlite3.connect(database)
    connection.execute(SCHEMA[0])
    connection.close()

    conversations, report = read_all(AmazonQImporter(), database)

    assert conversations == []
    assert [skip.reason for skip in report.skipped] == ["not an Amazon Q or Kiro CLI database (no conversations table)"]
