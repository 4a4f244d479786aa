"""OpenCode sessions, in both stores OpenCode has kept them in (it uses `$XDG_DATA_HOME/opencode`,
`~/.local/share/opencode`, on Linux, macOS and Windows alike):

- `opencode.db` (1.2 and later): SQLite tables `session` (title, directory, times, `parent_id` for a
  subagent's session), `message` and `part`, each message's and part's fields as JSON in `data`;
- `storage/` (0.4 to 1.1, and left in place when 1.2 copied it into the database): one JSON file
  each, `session/<project id>/<session id>.json`, `message/<session id>/<message id>.json`,
  `part/<message id>/<part id>.json`.

A session's title (unless it is still the default `New session - <time>`), times and directory
are the session's own; messages and their parts sort by id (OpenCode's ids are time-ordered). Text
the user typed and the assistant's text are the conversation; text OpenCode adds itself
(`synthetic`, such as a file pulled in with @) and reasoning are left out; each tool call becomes one
short line, its output another. Both stores give a session the same id, so a session found in both
is one chat.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping
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
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    shorten,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._files import any_file, file_time, read_head, read_regular
from importers._sqlite import DatabaseImporter, json_value
from importers._touches import touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation, Role, Touch

# Parts that are bookkeeping for OpenCode itself: steps, file snapshots, retries, compaction markers.
_SILENT_PARTS = {"reasoning", "step-start", "step-finish", "snapshot", "patch", "retry", "compaction", "agent"}
_TABLES = frozenset({"session", "message", "part"})
# The title a session has until OpenCode (or Kilo) names it: not a title, so the first prompt gives one.
_DEFAULT_TITLE = re.compile(r"^(New|Child) session - \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def data_folder(env: Mapping[str, str], home: Path) -> Path:
    """OpenCode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` (every OS)."""
    return env_folder(env, "XDG_DATA_HOME", home, ".local", "share") / "opencode"


class OpenCodeImporter(DatabaseImporter):
    """OpenCode 1.2 and later: the `opencode.db` SQLite database (`opencode-<channel>.db` for a
    preview channel's). Agents built on OpenCode keep the same database under their own names."""

    name = "opencode"
    app = "opencode"  # the folder under the data folder, and the database's name
    # The TUI's `--session` (`-s`) opens a session by its id (`ses_...`), the same in both stores.
    resume: ClassVar[tuple[str, ...]] = ("opencode", "--session", "{session}")
    variables = system_folders("XDG_DATA_HOME")
    tables = _TABLES
    kind = "an OpenCode database"
    none_found = "no OpenCode database (opencode.db) in {path}"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [env_folder(env, "XDG_DATA_HOME", home, ".local", "share") / self.app]

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(f for f in folder.glob(f"{self.app}*.db") if f.is_file())

    def is_database(self, file: Path) -> bool:
        return file.name.startswith(self.app) and file.suffix == ".db"

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        return _read_database(connection, where, report, unknown, self.name)


class OpenCodeFilesImporter(AgentLogImporter):
    """OpenCode 0.4 to 1.1: one JSON file per session, message and part under `storage/`."""

    name = "opencode-files"
    resume: ClassVar[tuple[str, ...]] = OpenCodeImporter.resume
    variables = system_folders("XDG_DATA_HOME")

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [data_folder(env, home) / "storage"]

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(f for f in (_storage(folder) / "session").glob("*/ses_*.json") if f.is_file())

    def context_files(self, session: Path) -> list[Path]:
        """The session's message and part files, which sync keeps beside its copy of the session file."""
        storage = session.parent.parent.parent
        messages = sorted((storage / "message" / session.stem).glob("*.json"))
        parts = [part for message in messages for part in sorted((storage / "part" / message.stem).glob("*.json"))]
        return [file for file in [*messages, *parts] if file.is_file()]

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_session_file(path)
        return path.is_dir() and any_file(_storage(path) / "session", 1, _looks_like_session_file)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no OpenCode sessions (storage/session/*/ses_*.json) under {path}")
        unknown: UnknownCounts = {}
        convert = lambda file: _convert_files(file, report, unknown)  # noqa: E731
        yield from convert_each(path, files, report, convert, "session")
        note_unknown(report, unknown)


def _storage(folder: Path) -> Path:
    """The `storage` folder: the folder given, or the one inside an OpenCode data folder."""
    return folder / "storage" if (folder / "storage" / "session").is_dir() else folder


def _looks_like_session_file(path: Path) -> bool:
    if not (path.name.startswith("ses_") and path.suffix == ".json"):
        return False
    head = read_head(path, 4096)
    return '"projectID"' in head and '"directory"' in head


# --- the database -------------------------------------------------------------------------------


def _read_database(
    connection: sqlite3.Connection, where: str, report: ImportReport, unknown: UnknownCounts, source: str
) -> Iterator[Conversation]:
    sessions = connection.execute(
        "SELECT id, title, directory, time_created, time_updated FROM session ORDER BY time_created, id"
    ).fetchall()
    for session_id, title, directory, created, updated in sessions:
        info = {
            "id": session_id,
            "title": title,
            "directory": directory,
            "time": {"created": created, "updated": updated},
        }
        rows = connection.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
        parts: dict[str, list[dict[str, Any]]] = {}
        for message_id, data in connection.execute(
            "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (session_id,)
        ):
            parts.setdefault(message_id, []).append(as_dict(json_value(data)))
        messages = [
            ({**as_dict(json_value(data)), "id": message_id}, parts.get(message_id, [])) for message_id, data in rows
        ]
        try:
            yield _conversation(info, messages, report, unknown, source)
        except Unusable as exc:
            report.skip(f"{where}, session {session_id}", str(exc))
        except RECORD_ERRORS as exc:
            report.skip(f"{where}, session {session_id}", f"malformed session: {exc}")


# --- the JSON files -------------------------------------------------------------------------------


def _read_json(file: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff"))
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise Unusable("not a JSON object")
    return value


def _convert_files(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    info = _read_json(file)
    storage = file.parent.parent.parent
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    broken = 0
    for message_file in sorted((storage / "message" / file.stem).glob("*.json")):
        try:
            message = {**_read_json(message_file), "id": message_file.stem}
            parts = [_read_json(part) for part in sorted((storage / "part" / message_file.stem).glob("*.json"))]
        except (Unusable, OSError):
            broken += 1
            continue
        messages.append((message, parts))
    if broken:
        report.note(f"{file.stem}: {broken} unreadable message file(s) skipped")
    conversation_id = info.get("id") or file.stem
    return _conversation({**info, "id": conversation_id}, messages, report, unknown, "opencode", file_time(file))


# --- one session ----------------------------------------------------------------------------------


def _conversation(
    info: dict[str, Any],
    messages: Iterable[tuple[dict[str, Any], list[dict[str, Any]]]],
    report: ImportReport,
    unknown: UnknownCounts,
    source: str,
    fallback: datetime | None = None,
) -> Conversation:
    session_id = as_id(info.get("id"))
    if not session_id:
        raise Unusable("no session id")
    turns: list[Turn] = []
    for message, parts in sorted(messages, key=lambda pair: as_str(pair[0].get("id"))):
        turns.extend(_turns(message, parts, unknown))
    times = as_dict(info.get("time"))
    return build_conversation(
        id=f"{source}:{session_id}",
        source=source,
        turns=turns,
        report=report,
        title="" if _DEFAULT_TITLE.match(as_str(info.get("title"))) else as_str(info.get("title")),
        created_at=parse_time(times.get("created")),
        updated_at=parse_time(times.get("updated")),
        project=as_str(info.get("directory")) or None,
        fallback_time=fallback,
    )


def _turns(message: dict[str, Any], parts: list[dict[str, Any]], unknown: UnknownCounts) -> list[Turn]:
    kind = as_str(message.get("role"))
    key = as_id(message.get("id"))
    when = parse_time(as_dict(message.get("time")).get("created"))
    if kind not in {"user", "assistant"}:
        count_unknown(unknown, kind, "messages", "role")
        return []
    role: Role = "user" if kind == "user" else "assistant"
    lines: list[str] = []
    results: list[Turn] = []
    touched: list[Touch] = []
    for number, part in enumerate(parts):
        kind = as_str(part.get("type"))
        if kind == "text":
            if not part.get("synthetic") and not part.get("ignored"):
                lines.append(as_str(part.get("text")).strip())
        elif kind == "file":
            lines.append(f"[file {as_str(part.get('filename')) or shorten(as_str(part.get('url')), 80)}]")
        elif kind == "subtask":
            lines.append(summarise_tool_call(f"task {as_str(part.get('agent'))}".strip(), part.get("description")))
        elif kind == "tool":
            state = as_dict(part.get("state"))
            lines.append(summarise_tool_call(as_str(part.get("tool")), state.get("input")))
            touched += touches_of(as_str(part.get("tool")), state.get("input"))
            status = as_str(state.get("status"))
            if status in {"completed", "error"}:
                output = as_str(state.get("output")) if status == "completed" else as_str(state.get("error"))
                result = summarise_tool_result(output, error=status == "error")
                results.append(Turn(f"{key}:tool{number}", "tool", result, when))
        elif kind not in _SILENT_PARTS:
            count_unknown(unknown, kind, "parts")
    text = "\n\n".join(line for line in lines if line)
    return [Turn(key, role, text, when, tuple(touched)), *results]
