"""Odd files an importer meets: lone surrogates in JSON exports, damaged SQLite databases, compressed or
oversized rows that declare more than any chat holds. Each is read as far as it can be, reported, and
never aborts the other chats."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import zipfile
from pathlib import Path

import pytest

from importers import registry
from importers._json import CleanUtf8, iter_json_array
from importers._safe import SURROGATES_NOTE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
LONE = "x \\udc00 y"  # as JSON text: a lone low surrogate escape


def _with_lone_surrogate(text: str, marker: str) -> str:
    assert marker in text
    return text.replace(marker, f"{marker} {LONE}")


def test_the_decoder_replaces_lone_surrogate_escapes_and_keeps_pairs_and_escaped_backslashes() -> None:
    document = r'["a \udc00 b", "\ud800", "\ud83d\ude00", "\\udc00", "\\\udc00", "\ud800\u0041"]'
    items = list(iter_json_array(io.BytesIO(document.encode())))
    assert items == ["a \ufffd b", "\ufffd", "\U0001f600", "\\udc00", "\\\ufffd", "\ufffdA"]


@pytest.mark.parametrize("size", [1, 2, 5, 7, 11, 13])
def test_an_escape_split_between_reads_is_still_seen_whole(size: int) -> None:
    text = '["' + "ab\\\\" * 3 + '\\ud83d\\ude00 \\udc00 \\"q\\" \\\\udc00"]'

    class Trickle(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            return super().read(size)

    clean = CleanUtf8(Trickle(text.encode()))
    out = b"".join(iter(lambda: clean.read(64), b""))
    assert json.loads(out) == json.loads(text.replace("\\udc00 ", "\\ufffd ", 1))
    assert clean.replaced == 1


def test_a_lone_surrogate_in_a_plain_export_costs_nothing(tmp_path: Path) -> None:
    records = [{"id": f"c{i}", "messages": [{"role": "user", "text": f"MARK{i} hello"}]} for i in range(3)]
    text = _with_lone_surrogate(json.dumps({"conversations": records}), "MARK1")
    path = tmp_path / "chats.json"
    path.write_text(text, encoding="utf-8")

    conversations, report = registry.read(path, "plain")
    chats = {c.id: c for c in conversations}

    assert sorted(chats) == ["c0", "c1", "c2"]
    assert "x \ufffd y" in chats["c1"].messages[0].text
    assert SURROGATES_NOTE in report.notes


def test_a_lone_surrogate_in_a_claude_export_costs_nothing(tmp_path: Path) -> None:
    source = FIXTURES / "claude" / "export-2025"
    folder = tmp_path / "export"
    shutil.copytree(source, folder)
    conversations_file = folder / "conversations.json"
    conversations_file.write_text(
        _with_lone_surrogate(conversations_file.read_text(encoding="utf-8"), "How do I proxy /grafana to port 3000?"),
        encoding="utf-8",
    )
    expected = len(list(registry.read(source)[0]))

    conversations, report = registry.read(folder)
    found = list(conversations)

    assert len(found) == expected
    assert any("x \ufffd y" in m.text for c in found for m in c.messages)
    assert SURROGATES_NOTE in report.notes


def test_a_lone_surrogate_in_a_chatgpt_export_costs_nothing(tmp_path: Path) -> None:
    source = FIXTURES / "chatgpt" / "single"
    original = (source / "conversations.json").read_text(encoding="utf-8")
    first_text = next(
        part
        for item in json.loads(original)
        for node in item["mapping"].values()
        if node.get("message")
        for part in node["message"]["content"].get("parts") or []
        if isinstance(part, str) and part.strip()
    )
    marker = json.dumps(first_text)[1:-1]
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("conversations.json", _with_lone_surrogate(original, marker))
    expected = len(list(registry.read(source)[0]))

    conversations, report = registry.read(export)
    found = list(conversations)

    assert len(found) == expected
    assert any("x \ufffd y" in m.text for c in found for m in c.messages)
    assert SURROGATES_NOTE in report.notes


def test_a_corrupt_opencode_database_is_reported_and_the_others_still_read(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 where SQLite keeps its schema's names: the database is skipped with a
    reason, never a traceback."""
    database = tmp_path / "opencode.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT)")
    connection.commit()
    connection.close()
    data = bytearray(database.read_bytes())
    at = data.index(b"tablesessionsession")  # the schema's row: type, name, table name
    data[at + 5 : at + 12] = b"\xff\xfe\xfd\xfc\xfb\xfa\xf9"
    database.write_bytes(bytes(data))

    conversations, report = registry.read(database, "opencode")
    assert list(conversations) == []
    assert report.skipped, report
    assert "database" in report.skipped[0].reason
