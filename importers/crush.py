"""Crush sessions: the SQLite database `crush.db` in each project's data folder (`<project>/.crush`
unless `options.data_directory` says otherwise). Crush lists every project it has run in, with its
data folder, in `projects.json` in its global data folder: `$CRUSH_GLOBAL_DATA`, else
`$XDG_DATA_HOME/crush`, else `%LOCALAPPDATA%\\crush` on Windows and `~/.local/share/crush` elsewhere.

Tables `sessions` (title, times in Unix seconds, `parent_session_id` for a sub-agent's task) and
`messages` (role, `parts`: a JSON list of `{type, data}`). User and assistant text is the
conversation; reasoning and finish markers are left out; tool calls become one short line and the
`tool` messages' results another; a `!command` the user ran is kept as its command and output; a
long paste, which Crush attaches as a text file (`paste_1.txt`), is the user's words. The
session Crush makes to generate a title (`title-<session id>`) is not a conversation. The project
is the folder holding `.crush`, or the one `projects.json` names for the data folder.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import sys
from collections.abc import Iterator, Mapping
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
    count_unknown,
    env_folder,
    expand_home,
    parse_time,
    shorten,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._files import read_regular, walk_files
from importers._sqlite import DatabaseImporter, Oversized, bounded_value
from importers._touches import ran, touches_of
from importers.base import ImportReport
from storage.models import Conversation, Role, Touch

DB_NAME = "crush.db"
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "tool": "tool"}
_SILENT_PARTS = {"reasoning", "finish"}
_PLACEHOLDER_TITLES = {"Untitled Session", "New Session"}  # until Crush has generated one


def global_data(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """Crush's global data folder, which holds `projects.json`."""
    for variable, below in (("CRUSH_GLOBAL_DATA", ""), ("XDG_DATA_HOME", "crush")):
        configured = env.get(variable, "").strip()
        if configured:
            return expand_home(configured, home) / below
    if platform.startswith(("win", "cygwin")):
        return env_folder(env, "LOCALAPPDATA", home, "AppData", "Local") / "crush"
    return home / ".local" / "share" / "crush"


def _projects(registry: Path) -> list[tuple[Path, Path]]:
    """(project folder, data folder) for each project in a `projects.json`."""
    try:
        listed = as_list(as_dict(json.loads(read_regular(registry).decode("utf-8", "replace"))).get("projects"))
    except (OSError, ValueError, RecursionError):
        return []
    found = []
    for entry in listed:
        project, data = as_str(as_dict(entry).get("path")), as_str(as_dict(entry).get("data_dir"))
        if project and data:
            found.append((Path(project), Path(project) / data if not Path(data).is_absolute() else Path(data)))
    return found


class CrushImporter(DatabaseImporter):
    name = "crush"
    variables: ClassVar[Mapping[str, str]] = {
        "CRUSH_GLOBAL_DATA": "Crush's global data folder, whose projects.json lists each project's database",
        **system_folders("XDG_DATA_HOME", "LOCALAPPDATA"),
    }
    database_name = DB_NAME
    tables = frozenset({"sessions", "messages"})
    kind = "a Crush database"
    none_found = f"no Crush database ({DB_NAME}) in {{path}} or its .crush folder"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [data / DB_NAME for _, data in _projects(global_data(env, home, platform) / "projects.json")]

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(f for f in walk_files(folder, 1) if f.name == DB_NAME) + sorted(
            f for f in folder.glob(f".crush/{DB_NAME}") if f.is_file()
        )

    def where(self, path: Path, database: Path) -> str:
        return str(database.relative_to(path)) if database != path else database.name

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        return _read_database(connection, where, _project(report.original(database)), report, unknown)


def _project(database: Path) -> str | None:
    """The folder Crush ran in: the one holding `.crush`."""
    data = database.parent
    return str(data.parent) if data.name == ".crush" else None


def _read_database(
    connection: sqlite3.Connection, where: str, project: str | None, report: ImportReport, unknown: UnknownCounts
) -> Iterator[Conversation]:
    sessions = connection.execute("SELECT id, title, created_at, updated_at FROM sessions ORDER BY created_at, id")
    for session_id, title, created, updated in sessions.fetchall():
        if str(session_id).startswith("title-"):
            continue  # Crush's own request for a title, not a conversation
        try:
            rows = connection.execute(
                "SELECT rowid, id, role, created_at FROM messages WHERE session_id = ? ORDER BY created_at, rowid",
                (session_id,),
            ).fetchall()
            turns: list[Turn] = []
            for rowid, message_id, role, created_at in rows:
                try:
                    parts = bounded_value(connection, "messages", "parts", rowid)
                except Oversized as exc:
                    report.skip(f"{where}, session {session_id}, message {message_id}", f"not read: {exc}")
                    continue
                turns += _turns(message_id, role, parts, created_at, unknown=unknown)
            yield build_conversation(
                id=f"crush:{session_id}",
                source="crush",
                turns=turns,
                report=report,
                title="" if as_str(title) in _PLACEHOLDER_TITLES else as_str(title),
                created_at=parse_time(created),
                updated_at=parse_time(updated),
                project=project,
            )
        except Unusable as exc:
            report.skip(f"{where}, session {session_id}", str(exc))
        except RECORD_ERRORS as exc:
            report.skip(f"{where}, session {session_id}", f"malformed session: {exc}")


def _turns(message_id: object, role: object, parts: object, created: object, *, unknown: UnknownCounts) -> list[Turn]:
    kind = as_str(role)
    if kind not in _ROLES:
        if kind != "system":
            count_unknown(unknown, kind, "messages", "role")
        return []
    try:
        loaded = json.loads(parts.decode("utf-8", "replace") if isinstance(parts, bytes) else as_str(parts))
    except (ValueError, RecursionError):
        raise Unusable(f"message {message_id} has unreadable parts") from None
    key, when = as_id(message_id), parse_time(created)
    lines: list[str] = []
    turns: list[Turn] = []
    touched: list[Touch] = []
    for number, wrapper in enumerate(as_list(loaded)):
        part_type, data = as_str(as_dict(wrapper).get("type")), as_dict(as_dict(wrapper).get("data"))
        if part_type == "text":
            lines.append(as_str(data.get("text")))
        elif part_type == "tool_call":
            lines.append(summarise_tool_call(as_str(data.get("name")), data.get("input")))
            touched += touches_of(as_str(data.get("name")), data.get("input"))
        elif part_type == "tool_result":
            text = summarise_tool_result(as_str(data.get("content")), error=bool(data.get("is_error")))
            turns.append(Turn(f"{key}:{number}", "tool", text, when))
        elif part_type == "binary" and as_str(data.get("MIMEType")).startswith("text/"):
            lines.append(_pasted(data))
        elif part_type in {"image_url", "binary"}:
            lines.append(f"[file {as_str(data.get('Path')) or shorten(as_str(data.get('url')), 80) or 'attached'}]")
        elif part_type == "shell_command":
            lines.append(f"$ {as_str(data.get('command'))}")
            touched += ran(as_str(data.get("command")))
            turns.append(Turn(f"{key}:{number}", "tool", summarise_tool_result(_shell_output(data)), when))
        elif part_type not in _SILENT_PARTS:
            count_unknown(unknown, part_type, "parts")
    text = "\n\n".join(line for line in lines if line.strip())
    own = [Turn(key, _ROLES[kind] if kind != "tool" else "tool", text, when, tuple(touched))] if text.strip() else []
    return own + turns


def _pasted(data: dict[str, Any]) -> str:
    """A text attachment's words: Crush keeps a long paste (`paste_1.txt`) as a `text/plain` binary
    part, its bytes base64-encoded in `Data`; what the user pasted is what they said."""
    try:
        return base64.b64decode(as_str(data.get("Data"))[:_PASTE_LIMIT], validate=False).decode("utf-8", "replace")
    except ValueError:
        return f"[file {as_str(data.get('Path')) or 'attached'}]"


_PASTE_LIMIT = 4 * 1024 * 1024  # base64 characters: a paste is text a person wrote, never this long


def _shell_output(data: dict[str, Any]) -> str:
    output = as_str(data.get("output"))
    code = data.get("exit_code")
    return f"{output}\n(exit {code})" if isinstance(code, int) and code else output
