"""Any input shaped like a supported format imports or fails with a clear error; the store goes on answering."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers import registry
from storage.embedding.embedder import HashEmbedder
from storage.errors import PastchatsError
from storage.library import Library
from tests.agent_fixtures import good_session
from tests.fuzz.strategies import damage, dumps, json_line, mutate
from tests.importers.test_amazon_q import write_amazon_q_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IMPORTER_FIXTURES = FIXTURES / "importers"

# Each format's seed (a real-shaped fixture), how it is laid out on disk, and where the importer is
# pointed: the exports' and the plain format's here, and for every agent whose sessions are files, a
# session of its fixtures that reads whole, where the agent keeps it.
EXPORTS: dict[str, tuple[Path, str]] = {
    "claude": (IMPORTER_FIXTURES / "claude/export-2025/conversations.json", "conversations.json"),
    "chatgpt": (IMPORTER_FIXTURES / "chatgpt/single/conversations.json", "conversations.json"),
    "plain": (FIXTURES / "corpus/chats.jsonl", "chats.jsonl"),
}
SEEDS = EXPORTS | {
    importer.name: good_session(importer.name) for importer in registry.AGENT_LOGS if not importer.database
}
# The agents' databases: Cursor's are fuzzed below; OpenCode's database (and Kilo's, the same
# database under another name) holds the records its files hold (fuzzed above as `opencode-files`) and
# converts them with the same code, and so does Goose's (`goose-files`); Crush's and Zed's broken rows
# are in their fixtures (tests/importers/test_crush.py, test_zed.py).
# Amazon Q's, Kiro CLI's and Grok CLI's databases are fuzzed below.
FORMATS = [*SEEDS, "cursor", "opencode", "kilo", "crush", "goose", "zed", "amazon-q", "kiro-cli", "grok-cli"]
RUNS = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_every_registered_format_is_fuzzed() -> None:
    assert sorted(FORMATS) == sorted(registry.names())


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    """One store for the whole module: each example deletes what it imported, so it stays small."""
    lib = Library.open(tmp_path_factory.mktemp("fuzz-store"), embedder=HashEmbedder())
    yield lib
    lib.close()


def hostile_file(seed: Path, data: st.DataObject) -> bytes:
    """The seed with random parts replaced, or its bytes damaged; JSON Lines are mutated line by line."""
    raw = seed.read_bytes()
    if seed.suffix == ".jsonl":  # a few records are enough, and keep each example fast
        raw = b"".join(raw.splitlines(keepends=True)[:4])
    if data.draw(st.booleans(), label="damage bytes"):
        return damage(raw, data)
    times = data.draw(st.integers(1, 4), label="mutations")
    if seed.suffix == ".md":
        lines = raw.decode().splitlines(keepends=True)
        for _ in range(times):
            at = data.draw(st.integers(0, len(lines)), label="line")
            lines.insert(at, data.draw(st.text(max_size=60), label="inserted line") + "\n")
        text = "".join(lines)
    elif seed.suffix == ".jsonl":
        records = [record for line in raw.decode().splitlines()[:4] if (record := json_line(line)) is not None]
        for _ in range(times):  # the file stays a list of lines; what each line holds is fuzzed
            at = data.draw(st.integers(0, len(records) - 1), label="record")
            records[at] = mutate(records[at], data, 1)
        text = "\n".join(dumps(record) for record in records) + "\n"
    else:
        text = dumps(mutate(json.loads(raw), data, times))
    return text.encode("utf-8", "surrogatepass")


def cursor_database(path: Path, data: st.DataObject) -> Path:
    """A Cursor state.vscdb whose ItemTable and cursorDiskKV rows hold fuzzed JSON."""
    tables: dict[str, dict[str, Any]] = json.loads((IMPORTER_FIXTURES / "cursor/global.json").read_text())
    tables["ItemTable"] = json.loads((IMPORTER_FIXTURES / "cursor/workspace.json").read_text())["ItemTable"]
    tables = mutate(tables, data, data.draw(st.integers(1, 4), label="mutations"))
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    with connection:
        for table in ("ItemTable", "cursorDiskKV"):
            connection.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            rows = tables.get(table) if isinstance(tables, dict) else None
            for key, value in (rows if isinstance(rows, dict) else {}).items():
                stored = value if isinstance(value, str) and data.draw(st.booleans()) else dumps(value)
                connection.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, stored.encode("utf-8", "surrogatepass")))
    connection.close()
    return path


def import_and_check(library: Library, path: Path, format: str) -> None:
    """Import through the registry; only the project's own errors may come out, and the store still answers."""
    before = library.stats().conversations
    imported: list[str] = []
    try:
        conversations, _report = registry.read(path, format)

        def remember() -> Iterator[Any]:
            for conversation in conversations:
                imported.append(conversation.id)
                yield conversation

        library.import_conversations(remember())
    except PastchatsError as exc:
        error = str(exc).strip()
    else:
        error = "no error"
    assert error, "an error with no words"
    assert "\n" not in error, error
    library.search("hello world", max_results=3)
    library.search("hello", mode="keyword")
    library.recent(n=5)
    assert library.stats().conversations >= before
    library.delete(imported)
    assert library.stats().conversations == before


@pytest.mark.parametrize("format", list(SEEDS))
@RUNS
@given(data=st.data())
def test_a_hostile_file_in_each_format_imports_or_fails_clearly(
    library: Library, format: str, data: st.DataObject
) -> None:
    seed, layout = SEEDS[format]
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / layout
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(hostile_file(seed, data))
        import_and_check(library, target, format)


@RUNS
@given(data=st.data())
def test_a_cursor_database_with_hostile_rows_imports_or_fails_clearly(library: Library, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        database = cursor_database(Path(folder) / "User" / "globalStorage" / "state.vscdb", data)
        if data.draw(st.booleans(), label="damage the database file"):
            database.write_bytes(damage(database.read_bytes(), data))
        import_and_check(library, database, "cursor")


@pytest.mark.parametrize(("format", "rows"), [("amazon-q", "rows.json"), ("kiro-cli", "kiro-rows.json")])
@RUNS
@given(data=st.data())
def test_an_amazon_q_database_with_hostile_conversations_imports_or_fails_clearly(
    library: Library, format: str, rows: str, data: st.DataObject
) -> None:
    """Amazon Q's and Kiro CLI's `data.sqlite3`, each conversation state's JSON fuzzed."""
    tables: dict[str, list[dict[str, Any]]] = json.loads((IMPORTER_FIXTURES / "amazon-q" / rows).read_text())
    for entries in tables.values():
        for row in entries:
            if data.draw(st.booleans(), label="fuzz this conversation"):
                value = mutate(row["value"], data, data.draw(st.integers(1, 3), label="mutations"))
                row["value"] = dumps(value).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as folder:
        database = write_amazon_q_database(tables, Path(folder) / format / "data.sqlite3")
        if data.draw(st.booleans(), label="damage the database file"):
            database.write_bytes(damage(database.read_bytes(), data))
        import_and_check(library, database, format)


@RUNS
@given(data=st.data())
def test_a_grok_cli_database_with_hostile_messages_imports_or_fails_clearly(
    library: Library, data: st.DataObject
) -> None:
    """Grok CLI's `grok.db`, its messages' JSON fuzzed (or the file's bytes damaged)."""
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / ".grok" / "grok.db"
        database.parent.mkdir()
        shutil.copy(IMPORTER_FIXTURES / "grok-cli/.grok/grok.db", database)
        connection = sqlite3.connect(database)
        with connection:
            rows = connection.execute("SELECT session_id, seq, message_json FROM messages").fetchall()
            for session, seq, text in rows:
                value = json_line(text)  # a row already broken stays as it is
                if value is not None and data.draw(st.booleans(), label="fuzz this message"):
                    fuzzed = dumps(mutate(value, data, data.draw(st.integers(1, 3), label="mutations")))
                    connection.execute(
                        "UPDATE messages SET message_json = ? WHERE session_id = ? AND seq = ?",
                        (fuzzed.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), session, seq),
                    )
        connection.close()
        if data.draw(st.booleans(), label="damage the database file"):
            database.write_bytes(damage(database.read_bytes(), data))
        import_and_check(library, database, "grok-cli")
