"""Goose sessions, in the two stores Goose has kept them in, both in `<data dir>/sessions/`:

- `sessions.db` (1.10 and later): SQLite tables `sessions` (name, working_dir, times) and `messages`
  (role, `content_json`, `created_timestamp` in Unix seconds, `metadata_json`);
- `<session id>.jsonl` (before 1.10, and left in place when 1.10 copied them into the database): a
  metadata line (`description`, `working_dir`), then one message per line.

The data dir is `$GOOSE_PATH_ROOT/data`, else `$XDG_DATA_HOME/goose` (`~/.local/share/goose`) on
Linux and macOS, `%APPDATA%\\Block\\goose\\data` on Windows (and `~/Library/Application
Support/Block/goose` on macOS, where some builds keep it). A message's content is a list of typed
items: text is the conversation; thinking is left out; a tool request becomes one short line, its
response another. Messages Goose hides from the user (`metadata.userVisible: false`, such as the
summary a compaction leaves for the model) are left out, as Goose's own view leaves them. Both stores
give a session the same id, so a session found in both is one chat.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from importers._common import (
    RECORD_ERRORS,
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    result_text,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._files import file_time, iter_jsonl, read_head
from importers._sqlite import DatabaseImporter, json_value
from importers._touches import touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation, Role, Touch

DB_NAME = "sessions.db"
_SILENT = {"thinking", "redactedThinking", "toolConfirmationRequest", "actionRequired", "systemNotification"}


def session_folders(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
    root = env.get("GOOSE_PATH_ROOT", "").strip()
    if root and Path(root).is_absolute():
        return [Path(root) / "data" / "sessions"]
    if platform.startswith(("win", "cygwin")):
        return [env_folder(env, "APPDATA", home, "AppData", "Roaming") / "Block" / "goose" / "data" / "sessions"]
    folders = [env_folder(env, "XDG_DATA_HOME", home, ".local", "share") / "goose" / "sessions"]
    if platform == "darwin":
        folders.append(home / "Library" / "Application Support" / "Block" / "goose" / "sessions")
    return folders


class GooseImporter(DatabaseImporter):
    """Goose 1.10 and later: `sessions.db`."""

    name = "goose"
    variables: ClassVar[Mapping[str, str]] = {
        "GOOSE_PATH_ROOT": "the folder Goose keeps everything under, whose data/sessions holds the sessions",
        **system_folders("XDG_DATA_HOME", "APPDATA"),
    }
    database_name = DB_NAME
    tables = frozenset({"sessions", "messages"})
    kind = "a Goose database"
    none_found = f"no Goose database ({DB_NAME}) in {{path}}"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [folder / DB_NAME for folder in session_folders(env, home, platform)]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        return [root / DB_NAME] if (root / DB_NAME).is_file() else []

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        return _read_database(connection, where, report, unknown)


class GooseFilesImporter(AgentLogImporter):
    """Goose before 1.10: one `.jsonl` file per session."""

    name = "goose-files"
    variables = GooseImporter.variables

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return session_folders(env, home, platform)

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        return sorted(f for f in root.glob("*.jsonl") if f.is_file())

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_session_file(path)
        return path.is_dir() and any(_looks_like_session_file(f) for f in self.session_files(path)[:50])

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Goose sessions (sessions/*.jsonl) in {path}")
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: _convert_file(file, report, unknown), "session")
        note_unknown(report, unknown)


def _looks_like_session_file(path: Path) -> bool:
    """A metadata line naming the working dir, or (no metadata) a message line with typed content."""
    if path.suffix != ".jsonl":
        return False
    first = read_head(path, 65536).split("\n", 1)[0]
    return '"working_dir"' in first or ('"role"' in first and '"created"' in first and '"content"' in first)


def _read_database(
    connection: sqlite3.Connection, where: str, report: ImportReport, unknown: UnknownCounts
) -> Iterator[Conversation]:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(sessions)")}
    name = "COALESCE(NULLIF(name, ''), description)" if "name" in columns else "description"
    query = f"SELECT id, {name}, working_dir, created_at, updated_at FROM sessions ORDER BY created_at, id"
    has_metadata = "metadata_json" in {row[1] for row in connection.execute("PRAGMA table_info(messages)")}
    for session_id, title, working_dir, created, updated in connection.execute(query).fetchall():
        metadata = "metadata_json" if has_metadata else "NULL"
        rows = connection.execute(
            f"SELECT id, role, content_json, created_timestamp, {metadata} FROM messages "
            "WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
        try:
            turns = []
            for _, role, content, when, meta in rows:
                message = {"role": role, "content": json_value(content), "created": when, "metadata": json_value(meta)}
                turns.extend(_turns(message, unknown))
            yield _conversation(as_id(session_id), as_str(title), as_str(working_dir), created, updated, turns, report)
        except Unusable as exc:
            report.skip(f"{where}, session {session_id}", str(exc))
        except RECORD_ERRORS as exc:
            report.skip(f"{where}, session {session_id}", f"malformed session: {exc}")


def _convert_file(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    meta: dict[str, Any] = {}
    turns: list[Turn] = []
    for number, record in iter_jsonl(file, report):
        record = as_dict(record)
        if number == 1 and "role" not in record:
            meta = record
            continue
        turns.extend(_turns(record, unknown))
    return _conversation(
        file.stem, as_str(meta.get("description")), as_str(meta.get("working_dir")), None, None, turns, report,
        fallback=file_time(file),
    )  # fmt: skip


def _conversation(
    session_id: str,
    title: str,
    working_dir: str,
    created: object,
    updated: object,
    turns: list[Turn],
    report: ImportReport,
    fallback: datetime | None = None,
) -> Conversation:
    if not session_id:
        raise Unusable("no session id")
    return build_conversation(
        id=f"goose:{session_id}",
        source="goose",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(created),
        updated_at=parse_time(updated),
        project=working_dir or None,
        fallback_time=fallback,
    )


def _turns(message: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    """A message's turns, keyed by position (the database keeps no message ids of Goose's own, and a
    session must get the same ids from either store)."""
    kind = as_str(message.get("role"))
    if kind not in {"user", "assistant"}:
        count_unknown(unknown, kind, "messages", "role")
        return []
    if as_dict(message.get("metadata")).get("userVisible") is False:
        return []
    role: Role = "user" if kind == "user" else "assistant"
    when = parse_time(message.get("created"))
    lines: list[str] = []
    results: list[Turn] = []
    touched: list[Touch] = []
    for item in as_list(message.get("content")):
        item = as_dict(item)
        item_type = as_str(item.get("type"))
        if item_type == "text":
            lines.append(as_str(item.get("text")))
        elif item_type == "image":
            lines.append("[image]")
        elif item_type in {"toolRequest", "frontendToolRequest"}:
            call = as_dict(item.get("toolCall"))
            value = as_dict(call.get("value"))
            lines.append(summarise_tool_call(as_str(value.get("name")) or "unknown", value.get("arguments")))
            touched += touches_of(as_str(value.get("name")), value.get("arguments"))
        elif item_type == "toolResponse":
            result = as_dict(item.get("toolResult"))
            output = result.get("value")  # a list of contents, or (later) `{content, isError}`
            content = as_dict(output).get("content") if isinstance(output, dict) else output
            error = as_str(result.get("status")) == "error" or bool(as_dict(output).get("isError"))
            text = as_str(result.get("error")) if as_str(result.get("status")) == "error" else result_text(content)
            results.append(Turn("", "tool", summarise_tool_result(text, error=error), when))
        elif item_type not in _SILENT:
            count_unknown(unknown, item_type, "content items")
    text = "\n\n".join(line for line in lines if line.strip())
    return ([Turn("", role, text, when, tuple(touched))] if text.strip() else []) + results
