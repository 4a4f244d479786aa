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


# ---- values that declare more than any chat holds ---------------------------------------------------

ON_LINUX = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")
PEAK_RSS_LIMIT_MB = 1536  # what any import may take, whatever one row or frame declares

_READ_AND_MEASURE = """
import json, sys
from pathlib import Path
from importers import registry
conversations, report = registry.read(Path(sys.argv[1]), sys.argv[2])
ids = sorted(c.id for c in conversations)
# VmHWM, not ru_maxrss: Linux carries the parent's peak across exec into ru_maxrss.
status = Path("/proc/self/status").read_text()
peak_mb = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024
print(json.dumps({"ids": ids, "skipped": [str(s) for s in report.skipped], "peak_mb": peak_mb}))
"""


def _read_in_a_process(path: Path, fmt: str) -> dict[str, object]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _READ_AND_MEASURE, str(path), fmt],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert isinstance(result, dict)
    return result


@ON_LINUX
def test_a_zstd_frame_declaring_gigabytes_is_refused_before_memory_is_spent(tmp_path: Path) -> None:
    import zstandard

    from tests.importers.test_zed import zed_database

    database = zed_database(FIXTURES, tmp_path / "zed" / "threads.db")
    declared = 3 * 1024**3 // 2  # 1.5 GiB of zeros, in a few hundred kilobytes
    compressor = zstandard.ZstdCompressor(level=1).compressobj(size=declared)
    zero = bytes(1 << 24)
    bomb = b"".join(compressor.compress(zero) for _ in range(declared // len(zero))) + compressor.flush()
    assert zstandard.frame_content_size(bomb) == declared
    connection = sqlite3.connect(database)
    connection.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('bomb', 'b', '2025-01-01T00:00:00Z', "
        "'zstd', ?)",
        (bomb,),
    )
    connection.commit()
    connection.close()
    good = sorted(c.id for c in registry.read(database, "zed")[0] if c.id != "zed:bomb")

    result = _read_in_a_process(database, "zed")

    assert result["ids"] == good
    assert any("bomb" in skip and "MB" in skip for skip in result["skipped"])  # type: ignore[union-attr]
    assert result["peak_mb"] < PEAK_RSS_LIMIT_MB  # type: ignore[operator]


@ON_LINUX
def test_a_huge_crush_row_is_measured_before_it_is_read(tmp_path: Path) -> None:
    from tests.importers.test_crush import crush_database

    database = crush_database(FIXTURES, tmp_path / "crush" / "crush.db")
    connection = sqlite3.connect(database)
    session, message, *_ = connection.execute("SELECT session_id, id FROM messages ORDER BY created_at").fetchone()
    huge = 300 * 1024**2  # well past the cap: the peak must not grow with it
    connection.execute("UPDATE messages SET parts = ? WHERE id = ?", ("x" * huge, message))
    connection.commit()
    connection.close()

    result = _read_in_a_process(database, "crush")

    assert f"crush:{session}" in result["ids"]  # type: ignore[operator]
    assert any(message in skip and "MB" in skip for skip in result["skipped"])  # type: ignore[union-attr]
    assert result["peak_mb"] < 250  # type: ignore[operator]
