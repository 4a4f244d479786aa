"""A hostile record costs only itself: beside it, in every format, the good chats import exactly as
they do alone, and the hostile one is imported or reported, never silently dropped."""

from __future__ import annotations

import functools
import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers import registry
from importers.base import ImportReport
from storage.models import Conversation
from tests.agent_fixtures import good_session
from tests.fuzz.strategies import damage, dumps, json_line, mutate
from tests.importers.test_amazon_q import write_amazon_q_database
from tests.importers.test_crush import crush_database
from tests.importers.test_goose import goose_database
from tests.importers.test_opencode import database_from_storage
from tests.importers.test_zed import zed_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IMPORTERS = FIXTURES / "importers"
RUNS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
_UUID = re.compile(r"[0-9a-f]{8}(?=-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def other_ids(text: str) -> str:
    """The same records under ids of their own: every uuid (the ids of every format but three) changed."""
    return _UUID.sub("fa11fa11", text).replace("comp-", "comp-fa11-")


def hostile_json_lines(raw: str, data: st.DataObject) -> str:
    """A session file's lines under other ids, then mutated line by line or damaged as bytes."""
    raw = other_ids(raw)
    if data.draw(st.booleans(), label="damage bytes"):
        return damage(raw.encode(), data).decode("utf-8", "replace")
    records = [record for line in raw.splitlines() if (record := json_line(line)) is not None]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        at = data.draw(st.integers(0, len(records) - 1), label="line")
        records[at] = mutate(records[at], data, 1)
    return "\n".join(dumps(record) for record in records) + "\n"


# Each format: (where the importer is pointed, relative to a folder; write the good records there;
# add a hostile neighbour beside them). A format whose records share one JSON document keeps the
# hostile record valid JSON: a break in a document ends every format's reading of it.
Writer = Callable[[Path], None]
Neighbour = Callable[[Path, st.DataObject], None]


def plain() -> tuple[str, Writer, Neighbour]:
    lines = (FIXTURES / "corpus" / "chats.jsonl").read_text(encoding="utf-8").splitlines()[:3]

    def good(folder: Path) -> None:
        (folder / "chats.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        record = json.loads(lines[0])
        record["id"] = "hostile-neighbour"
        line = dumps(mutate(record, data, data.draw(st.integers(1, 3), label="mutations")))
        if data.draw(st.booleans(), label="damage bytes"):
            line = damage(line.encode("utf-8", "surrogatepass"), data).decode("utf-8", "replace").replace("\n", " ")
            line = line if line.strip() else "{"  # a blank line is no record
        at = data.draw(st.integers(0, len(lines)), label="at line")
        text = "\n".join([*lines[:at], line, *lines[at:]]) + "\n"
        (folder / "chats.jsonl").write_bytes(text.encode("utf-8", "surrogatepass"))

    return "chats.jsonl", good, hostile


def export_list(seed: Path) -> tuple[str, Writer, Neighbour]:
    """Claude.ai and ChatGPT exports: one JSON list of conversations."""
    records: list[Any] = json.loads(seed.read_text(encoding="utf-8"))

    def good(folder: Path) -> None:
        (folder / "conversations.json").write_text(dumps(records), encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        neighbour = json.loads(other_ids(json.dumps(records[0])))
        neighbour = mutate(neighbour, data, data.draw(st.integers(1, 3), label="mutations"))
        at = data.draw(st.integers(0, len(records)), label="at item")
        text = dumps([*records[:at], neighbour, *records[at:]])
        (folder / "conversations.json").write_bytes(text.encode("utf-8", "surrogatepass"))

    return "conversations.json", good, hostile


def session_files(seed: Path, layout: str, neighbour_name: str) -> tuple[str, Writer, Neighbour]:
    """Agents' logs: a folder of session files, one chat each; the neighbour is one more file."""
    raw = seed.read_text(encoding="utf-8")
    root = layout.split("/", 1)[0]

    def good(folder: Path) -> None:
        target = folder / layout
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        target = (folder / layout).parent / other_ids(neighbour_name)
        if seed.suffix == ".jsonl":
            target.write_bytes(hostile_json_lines(raw, data).encode("utf-8", "surrogatepass"))
        elif data.draw(st.booleans(), label="damage bytes"):
            target.write_bytes(damage(other_ids(raw).encode(), data))
        else:
            document = mutate(json.loads(other_ids(raw)), data, data.draw(st.integers(1, 3), label="mutations"))
            target.write_bytes(dumps(document).encode("utf-8", "surrogatepass"))

    return root, good, hostile


def aider() -> tuple[str, Writer, Neighbour]:
    raw = (IMPORTERS / "aider" / ".aider.chat.history.md").read_text(encoding="utf-8")

    def good(folder: Path) -> None:
        (folder / ".aider.chat.history.md").write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        lines = ["# aider chat started at 2031-01-01 00:00:00", "#### a question", "an answer"]
        for _ in range(data.draw(st.integers(1, 4), label="insertions")):
            at = data.draw(st.integers(1, len(lines)), label="line")
            lines.insert(at, data.draw(st.text(max_size=60), label="inserted line").replace("\r", " "))
        text = raw + "\n" + "\n".join(lines) + "\n"
        (folder / ".aider.chat.history.md").write_bytes(text.encode("utf-8", "surrogatepass"))

    return ".aider.chat.history.md", good, hostile


def cursor() -> tuple[str, Writer, Neighbour]:
    rows: dict[str, Any] = json.loads((IMPORTERS / "cursor" / "global.json").read_text())["cursorDiskKV"]
    composer = {key: value for key, value in rows.items() if "comp-1111" in key}
    layout = "User/globalStorage/state.vscdb"

    def write(folder: Path, table: dict[str, Any]) -> None:
        database = folder / layout
        database.parent.mkdir(parents=True, exist_ok=True)
        database.unlink(missing_ok=True)
        connection = sqlite3.connect(database)
        with connection:
            connection.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            connection.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            for key, value in table.items():
                stored = value if isinstance(value, str) else dumps(value)
                connection.execute(
                    "INSERT INTO cursorDiskKV VALUES (?, ?)", (key, stored.encode("utf-8", "surrogatepass"))
                )
        connection.close()

    def hostile(folder: Path, data: st.DataObject) -> None:
        neighbour: dict[str, Any] = json.loads(other_ids(json.dumps(composer)))
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):  # the rows stay; what they hold is fuzzed
            key = data.draw(st.sampled_from(sorted(neighbour)), label="row")
            neighbour[key] = mutate(neighbour[key], data, 1)
        write(folder, {**rows, **neighbour})

    return layout, lambda folder: write(folder, rows), hostile


def task_folders(seed: Path, extension: str) -> tuple[str, Writer, Neighbour]:
    """Cline and its forks: a folder per task; the neighbour is one more task."""
    raw = seed.read_text(encoding="utf-8")

    def good(folder: Path) -> None:
        task = folder / extension / "tasks" / "1754294400000"
        task.mkdir(parents=True, exist_ok=True)
        (task / "ui_messages.json").write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        task = folder / extension / "tasks" / "1754294499999"
        task.mkdir(parents=True, exist_ok=True)
        if data.draw(st.booleans(), label="damage bytes"):
            (task / "ui_messages.json").write_bytes(damage(raw.encode(), data))
        else:
            document = mutate(json.loads(raw), data, data.draw(st.integers(1, 3), label="mutations"))
            (task / "ui_messages.json").write_bytes(dumps(document).encode("utf-8", "surrogatepass"))

    return extension, good, hostile


def hostile_json_text(text: str, data: st.DataObject) -> str:
    """A JSON column's text, mutated as JSON or damaged as bytes."""
    damaged = data.draw(st.booleans(), label="damage bytes")
    try:
        value = None if damaged else json.loads(text)
    except ValueError:  # a fixture broken on purpose: damaged further instead
        damaged = True
    if damaged:
        return damage(text.encode(), data).decode("utf-8", "replace")
    return dumps(mutate(value, data, data.draw(st.integers(1, 3), label="mutations")))


def session_rows(
    fixture: str, build: Callable[[Path, Path], Path], layout: str, json_columns: tuple[str, ...]
) -> tuple[str, Writer, Neighbour]:
    """Crush and Goose: a database of sessions and their messages; the neighbour is one more session,
    a copy of the first under an id of its own, with a message's JSON mutated."""
    rows: dict[str, list[dict[str, Any]]] = json.loads((IMPORTERS / fixture).read_text())

    def write(folder: Path, table: dict[str, list[dict[str, Any]]]) -> None:
        fixtures = folder / "fixtures"
        (fixtures / fixture).parent.mkdir(parents=True, exist_ok=True)
        (fixtures / fixture).write_text(json.dumps(table))
        (folder / layout).parent.mkdir(parents=True, exist_ok=True)
        (folder / layout).unlink(missing_ok=True)
        build(fixtures, folder / layout)

    def hostile(folder: Path, data: st.DataObject) -> None:
        first = rows["sessions"][0]["id"]
        session = {**rows["sessions"][0], "id": f"fa11-{first}"}
        messages = [
            {**{k: v for k, v in m.items() if k != "id"}, "session_id": session["id"]}
            | ({"id": f"fa11-{m['id']}"} if "id" in m else {})
            for m in rows["messages"]
            if m["session_id"] == first
        ]
        message = data.draw(st.sampled_from(messages), label="message")
        column = data.draw(st.sampled_from([c for c in json_columns if message.get(c)]), label="column")
        message[column] = hostile_json_text(message[column], data)
        write(folder, {"sessions": [*rows["sessions"], session], "messages": [*rows["messages"], *messages]})

    return layout, lambda folder: write(folder, rows), hostile


def zed() -> tuple[str, Writer, Neighbour]:
    """Zed: a row per thread; the neighbour is a copy of the first thread, mutated, under an id of its own."""
    rows: list[dict[str, Any]] = json.loads((IMPORTERS / "zed/threads.json").read_text())

    def write(folder: Path, table: list[dict[str, Any]]) -> None:
        (folder / "fixtures/zed").mkdir(parents=True, exist_ok=True)
        (folder / "fixtures/zed/threads.json").write_text(json.dumps(table))
        (folder / "threads/threads.db").unlink(missing_ok=True)
        zed_database(folder / "fixtures", folder / "threads/threads.db")

    def hostile(folder: Path, data: st.DataObject) -> None:
        neighbour = json.loads(other_ids(json.dumps(rows[0])))
        neighbour["thread"] = mutate(neighbour["thread"], data, data.draw(st.integers(1, 3), label="mutations"))
        write(folder, [*rows, neighbour])

    return "threads/threads.db", lambda folder: write(folder, rows), hostile


_SHOP_SESSION = "ses_6a1f0c2b3ffeA1b2C3d4E5f6G7"


def opencode_neighbour(storage: Path) -> list[Path]:
    """A copy of one OpenCode session's files (session, messages, parts) under ids of their own."""

    def renamed(text: str) -> str:
        return text.replace(_SHOP_SESSION, "ses_6a1f0c2b3ffeFa11Fa11Fa11Fa").replace("_99a0", "_f11a")

    copies = []
    for file in sorted(storage.rglob("*.json")):
        text = file.read_text(encoding="utf-8")
        if (
            _SHOP_SESSION in file.name
            or (f'"{_SHOP_SESSION}"' in text and "message" in file.parts[-3:])
            or (
                file.parent.parent.name == "part"
                and (storage / "message" / _SHOP_SESSION / f"{file.parent.name}.json").exists()
            )
        ):
            target = storage / renamed(str(file.relative_to(storage)))
        else:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(renamed(text), encoding="utf-8")
        copies.append(target)
    return copies


def opencode_files() -> tuple[str, Writer, Neighbour]:
    """OpenCode 0.4-1.1: a file per session, message and part; the neighbour is one more session."""
    seed = IMPORTERS / "opencode/shapes/storage"

    def good(folder: Path) -> None:
        shutil.copytree(seed, folder / "storage")

    def hostile(folder: Path, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(opencode_neighbour(folder / "storage")), label="file")
        target.write_bytes(hostile_json_text(target.read_text(encoding="utf-8"), data).encode("utf-8", "surrogatepass"))

    return "storage", good, hostile


def opencode() -> tuple[str, Writer, Neighbour]:
    """OpenCode 1.2 on: `opencode.db`, laid out as its migration lays out the files; the neighbour is
    one more session, one of whose rows holds hostile JSON."""
    seed = IMPORTERS / "opencode/shapes/storage"
    schema = IMPORTERS / "opencode/real-1.18/opencode.db"

    def good(folder: Path) -> None:
        shutil.copytree(seed, folder / "storage")
        database_from_storage(folder / "storage", schema, folder / "opencode.db")

    def hostile(folder: Path, data: st.DataObject) -> None:
        opencode_neighbour(folder / "storage")
        (folder / "opencode.db").unlink()
        database_from_storage(folder / "storage", schema, folder / "opencode.db")
        connection = sqlite3.connect(folder / "opencode.db")
        with connection:
            rows = connection.execute(
                "SELECT 'message', id, data FROM message WHERE session_id LIKE '%Fa11%' "
                "UNION ALL SELECT 'part', id, data FROM part WHERE session_id LIKE '%Fa11%' ORDER BY 1, 2"
            ).fetchall()
            for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                table, row_id, text = data.draw(st.sampled_from(rows), label="row")
                connection.execute(
                    f"UPDATE {table} SET data = ? WHERE id = ?",
                    (hostile_json_text(text, data).encode("utf-8", "surrogatepass"), row_id),
                )
        connection.close()

    return "opencode.db", good, hostile


def kilo() -> tuple[str, Writer, Neighbour]:
    """Kilo 7: `kilo.db`, OpenCode's database under Kilo's name; the neighbour is a copy of a session
    under ids of its own, one of whose rows holds hostile JSON."""
    seed = IMPORTERS / "kilo/shapes-7.6/kilo.db"
    session = "ses_3a1f0c2e9ffeAbCdEfGhIjKlMn"

    def renamed(value: object) -> object:
        return value.replace("_c5e0f3d1", "_fa11f3d1").replace(session, "ses_fa11") if isinstance(value, str) else value

    def hostile(folder: Path, data: st.DataObject) -> None:
        connection = sqlite3.connect(folder / "kilo.db")
        connection.row_factory = sqlite3.Row
        with connection:
            for table, where in (("session", "id"), ("message", "session_id"), ("part", "session_id")):
                for row in connection.execute(f"SELECT * FROM {table} WHERE {where} = ?", (session,)).fetchall():
                    names = row.keys()
                    values = [
                        renamed(row[name]) if name in {"id", "session_id", "message_id"} else row[name]
                        for name in names
                    ]
                    connection.execute(
                        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", values
                    )
            rows = connection.execute(
                "SELECT 'message', id, data FROM message WHERE session_id = 'ses_fa11' "
                "UNION ALL SELECT 'part', id, data FROM part WHERE session_id = 'ses_fa11' ORDER BY 1, 2"
            ).fetchall()
            for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                table, row_id, text = data.draw(st.sampled_from(rows), label="row")
                connection.execute(
                    f"UPDATE {table} SET data = ? WHERE id = ?",
                    (hostile_json_text(text, data).encode("utf-8", "surrogatepass"), row_id),
                )
        connection.close()

    return "kilo.db", lambda folder: shutil.copy(seed, folder / "kilo.db"), hostile


def grok_cli() -> tuple[str, Writer, Neighbour]:
    """Grok CLI: `grok.db`; the neighbour is a copy of a session under an id of its own, some of whose
    messages hold hostile JSON."""
    seed = IMPORTERS / "grok-cli/.grok/grok.db"

    def hostile(folder: Path, data: st.DataObject) -> None:
        connection = sqlite3.connect(folder / "grok.db")
        with connection:
            for table, key in (("sessions", "id"), ("messages", "session_id")):
                cursor = connection.execute(f"SELECT * FROM {table} WHERE {key} = 'a1b2c3d4e5f6'")
                names = [column[0] for column in cursor.description]
                for row in cursor.fetchall():
                    values = ["fa11fa11fa11" if name == key else value for name, value in zip(names, row, strict=True)]
                    connection.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(values))})", values)
            copied = "SELECT seq, message_json FROM messages WHERE session_id = 'fa11fa11fa11'"
            rows = connection.execute(copied).fetchall()
            for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                seq, text = data.draw(st.sampled_from(rows), label="row")
                connection.execute(
                    "UPDATE messages SET message_json = ? WHERE session_id = 'fa11fa11fa11' AND seq = ?",
                    # The table is STRICT: its text column takes text, and only valid text.
                    (hostile_json_text(text, data).encode("utf-8", "surrogatepass").decode("utf-8", "replace"), seq),
                )
        connection.close()

    return "grok.db", lambda folder: shutil.copy(seed, folder / "grok.db") and None, hostile


def cline_sdk() -> tuple[str, Writer, Neighbour]:
    """Cline's SDK: a folder per session holding its messages; the neighbour is one more session."""
    seed = IMPORTERS / "cline-sdk/shapes/data/sessions/1784094124598_rruoq/1784094124598_rruoq.messages.json"
    raw = seed.read_text(encoding="utf-8")

    def good(folder: Path) -> None:
        target = folder / "sessions" / "1784094124598_rruoq" / seed.name
        target.parent.mkdir(parents=True)
        target.write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        target = folder / "sessions" / "1784094124598_fa11" / "1784094124598_fa11.messages.json"
        target.parent.mkdir()
        text = raw.replace("1784094124598_rruoq", "1784094124598_fa11").replace("msg_mr9s", "msg_fa11")
        target.write_bytes(hostile_json_text(text, data).encode("utf-8", "surrogatepass"))

    return "sessions", good, hostile


def amazon_q(table: str, rows: str, folder_name: str) -> tuple[str, Writer, Neighbour]:
    """Amazon Q and Kiro CLI: a row per conversation; the neighbour is a copy of the first under an
    id and folder of its own, its conversation state mutated."""
    tables: dict[str, list[dict[str, Any]]] = json.loads((IMPORTERS / "amazon-q" / rows).read_text())
    layout = f"{folder_name}/data.sqlite3"

    def hostile(folder: Path, data: st.DataObject) -> None:
        neighbour = json.loads(other_ids(json.dumps(tables[table][0])))
        neighbour["key"] = "/home/fa11/neighbour"
        value = mutate(neighbour["value"], data, data.draw(st.integers(1, 3), label="mutations"))
        neighbour["value"] = dumps(value).encode("utf-8", "surrogatepass")
        (folder / layout).unlink()
        write_amazon_q_database({**tables, table: [*tables[table], neighbour]}, folder / layout)

    return layout, lambda folder: write_amazon_q_database(tables, folder / layout) and None, hostile


def kimi() -> tuple[str, Writer, Neighbour]:
    """Kimi CLI: a folder per session; the neighbour is one more session's wire log."""
    seed = _one("kimi-cli/.kimi/sessions/*/2b7e4c1a-*/wire.jsonl")
    raw = seed.read_text(encoding="utf-8")
    layout = ".kimi/sessions/93810c1caacf64d96eac69398065e2d9/2b7e4c1a-9d3f-4e6a-8b5c-1d2e3f4a5b6c/wire.jsonl"

    def good(folder: Path) -> None:
        (folder / layout).parent.mkdir(parents=True, exist_ok=True)
        (folder / layout).write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        target = folder / other_ids(layout)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(hostile_json_lines(raw, data).encode("utf-8", "surrogatepass"))

    return ".kimi", good, hostile


def kimi_code() -> tuple[str, Writer, Neighbour]:
    """Kimi Code: a folder per session; the neighbour is one more session's main wire log."""
    seed = _one("kimi-code/.kimi-code/sessions/wd_shop_*/session_*/agents/main/wire.jsonl")
    raw = seed.read_text(encoding="utf-8")
    session = "session_8f2c1d4e-5a6b-4c7d-9e8f-0a1b2c3d4e5f"
    layout = f".kimi-code/sessions/wd_shop_2f866d424f70/{session}/agents/main/wire.jsonl"

    def good(folder: Path) -> None:
        (folder / layout).parent.mkdir(parents=True, exist_ok=True)
        (folder / layout).write_text(raw, encoding="utf-8")

    def hostile(folder: Path, data: st.DataObject) -> None:
        target = folder / layout.replace("session_8f2c1d4e", "session_fa11fa11")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(hostile_json_lines(raw, data).encode("utf-8", "surrogatepass"))

    return ".kimi-code", good, hostile


def mistral_vibe() -> tuple[str, Writer, Neighbour]:
    """Mistral Vibe: a folder per session (its messages and its meta.json); the neighbour is one more
    session's folder, its messages hostile."""
    seed = IMPORTERS / "mistral-vibe/logs/session/session_20260612_091500_3f2a9c41"
    sessions = ".vibe/logs/session"

    def hostile(folder: Path, data: st.DataObject) -> None:
        copy = folder / sessions / "session_20260612_091500_fa11fa11"
        copy.mkdir()
        (copy / "meta.json").write_text(other_ids((seed / "meta.json").read_text(encoding="utf-8")), encoding="utf-8")
        raw = (seed / "messages.jsonl").read_text(encoding="utf-8")
        (copy / "messages.jsonl").write_bytes(hostile_json_lines(raw, data).encode("utf-8", "surrogatepass"))

    return sessions, lambda folder: shutil.copytree(seed, folder / sessions / seed.name) and None, hostile


def openhands(store: str, seed_id: str, state: str, state_id: str) -> tuple[str, Writer, Neighbour]:
    """OpenHands: a folder per conversation, a file per event; the neighbour is a copy of the
    conversation under an id of its own, one of its files hostile."""
    seed = IMPORTERS / ("openhands-v0" if store == "sessions" else "openhands") / ".openhands" / store / seed_id
    sessions = f".openhands/{store}"

    def hostile(folder: Path, data: st.DataObject) -> None:
        copy = folder / sessions / "fa11fa112b9e8d4c6fa0b1c2d3e4f5a6"
        shutil.copytree(seed, copy)
        metadata = copy / state
        metadata.write_text(metadata.read_text().replace(state_id, "fa11fa11-2b9e-4d4c-8fa0-b1c2d3e4f5a6"))
        target = data.draw(st.sampled_from(sorted(copy.rglob("*.json"))), label="file")
        if data.draw(st.booleans(), label="damage bytes") or not target.read_text().endswith("}"):
            target.write_bytes(damage(target.read_bytes(), data))
        else:
            document = mutate(json.loads(target.read_text()), data, data.draw(st.integers(1, 3), label="mutations"))
            target.write_bytes(dumps(document).encode("utf-8", "surrogatepass"))

    return sessions, lambda folder: shutil.copytree(seed, folder / sessions / seed.name) and None, hostile


def _one(pattern: str) -> Path:
    return next(IMPORTERS.glob(pattern))


def agent_sessions(format: str) -> tuple[str, Writer, Neighbour]:
    """An agent whose sessions are files: a session of its fixtures that reads whole, where the agent
    keeps it; the neighbour is one more session file beside it."""
    seed, layout = good_session(format)
    return session_files(seed, layout, f"{seed.stem}-fa11{seed.suffix}")


# The formats whose good records and hostile neighbour are written their own way; every other agent's
# are its session files (`agent_sessions`).
WRITTEN: dict[str, Callable[[], tuple[str, Writer, Neighbour]]] = {
    "plain": plain,
    "claude": lambda: export_list(IMPORTERS / "claude/export-2025/conversations.json"),
    "chatgpt": lambda: export_list(IMPORTERS / "chatgpt/single/conversations.json"),
    "aider": aider,
    "cursor": cursor,
    "cline": lambda: task_folders(_one("cline/*/*/*/*/tasks/1754294400000/ui_messages.json"), "saoudrizwan.claude-dev"),
    "roo-code": lambda: task_folders(
        next(IMPORTERS.glob("roo-code/**/019bd3f2-*/ui_messages.json")), "rooveterinaryinc.roo-cline"
    ),
    "kilo-code": lambda: task_folders(next(IMPORTERS.glob("kilo-code/**/ui_messages.json")), "kilocode.kilo-code"),
    # A session's folder is named by its id too: the neighbour is a session of the older, flat layout.
    "cursor-agent": lambda: session_files(
        _one("cursor-agent/.cursor/projects/*/agent-transcripts/7e6d5c4b-*.jsonl"),
        ".cursor/projects/home-ana-src-vite/agent-transcripts/7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918.jsonl",
        "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918.jsonl",
    ),
    "opencode": opencode,
    "opencode-files": opencode_files,
    "crush": lambda: session_rows("crush/rows.json", crush_database, "project/.crush/crush.db", ("parts",)),
    "goose": lambda: session_rows(
        "goose/rows.json", goose_database, "sessions/sessions.db", ("content_json", "metadata_json")
    ),
    "zed": zed,
    "kilo": kilo,
    "copilot-cli": lambda: session_files(
        _one("copilot-cli/shapes-1.0/session-state/2f8d9c41-*/events.jsonl"),
        "session-state/2f8d9c41-7a3e-4b6d-9e1f-0c2b3a4d5e6f/events.jsonl",
        "../fa11fa11-7a3e-4b6d-9e1f-0c2b3a4d5e6f.jsonl",
    ),
    "cline-sdk": cline_sdk,
    "grok-cli": grok_cli,
    "amazon-q": lambda: amazon_q("conversations", "rows.json", "amazon-q"),
    "kiro-cli": lambda: amazon_q("conversations_v2", "kiro-rows.json", "kiro-cli"),
    "pi": lambda: session_files(
        _one("pi/sessions/--home-ana-src-shop--/*.jsonl"),
        "sessions/--home-a--/2026-02-10T08-00-00-000Z_019c2f4e-8a1b-7c3d-9e4f-5a6b7c8d9e0f.jsonl",
        "2026-02-10T09-00-00-000Z_019c2f4e-8a1b-7c3d-9e4f-5a6b7c8d9e0f.jsonl",
    ),
    "kimi-cli": kimi,
    "kimi-code": kimi_code,
    "mistral-vibe": mistral_vibe,
    "openhands": lambda: openhands(
        "conversations", "a3f25b1c3e3b47c2b2f6d735b039e302", "base_state.json", "a3f25b1c-3e3b-47c2-b2f6-d735b039e302"
    ),
    "openhands-v0": lambda: openhands(
        "sessions", "7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7", "metadata.json", "7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7"
    ),
}
SOURCES = WRITTEN | {
    importer.name: functools.partial(agent_sessions, importer.name)
    for importer in registry.AGENT_LOGS
    if importer.name not in WRITTEN and not importer.database
}


def test_every_registered_format_has_hostile_neighbours() -> None:
    assert sorted(SOURCES) == sorted(registry.names())


def content(conversation: Conversation) -> tuple[Any, ...]:
    """What a chat holds. Not its times: a chat without any takes the time it is read at."""
    messages = [(m.id, m.role, m.text, m.created_at) for m in conversation.messages]
    return conversation.title, conversation.project, conversation.url, conversation.source, messages


def read(path: Path, format: str) -> tuple[list[Conversation], ImportReport]:
    conversations, report = registry.read(path, format)
    return list(conversations), report


@pytest.mark.parametrize("format", list(SOURCES))
@RUNS
@given(data=st.data())
def test_good_chats_beside_a_hostile_one_import_as_they_do_alone(format: str, data: st.DataObject) -> None:
    """Through `registry.read`, the path every import and sync takes (the fuzz test of whole files
    takes what it yields on into a store)."""
    where, good, hostile = SOURCES[format]()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        good(folder)
        alone, alone_report = read(folder / where, format)
        assert alone, "the good records import by themselves"
        expected = {c.id: content(c) for c in alone}

        hostile(folder, data)
        conversations, report = read(folder / where, format)

    got = {c.id: content(c) for c in conversations}
    assert {cid: got.get(cid) for cid in expected} == expected, report.skipped
    reported = len(report.skipped) > len(alone_report.skipped)
    assert set(got) - set(expected) or reported, f"the hostile record was neither imported nor reported: {report}"
    for skip in report.skipped:
        assert skip.reason.strip()
        assert str(skip).isprintable(), str(skip)
