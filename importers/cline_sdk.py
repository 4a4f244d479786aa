"""Cline's sessions as its SDK keeps them (cline/cline `sdk/`: the `cline` CLI 2, Cline's hub and the
hosts built on it): an index of sessions, the SQLite database `<data>/db/sessions.db`
(`$CLINE_DB_DATA_DIR`), and per session a folder `<data>/sessions/<session id>/`
(`$CLINE_SESSION_DATA_DIR`) holding its manifest `<session id>.json` and its messages
`<session id>.messages.json`; `<data>` is `$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else
`~/.cline/data`, on every OS. The tasks Cline's VS Code extension kept before are another format
(`importers.cline`).

A session is its messages file (`{version, sessionId, messages: [...]}`, a bare list in the first
versions): Anthropic-shaped messages, whose text blocks are the conversation, `tool_use` blocks one
short line each and `tool_result` blocks the tools' output; thinking is left out, an attached file
(`file` block) is named. What the runtime wraps a prompt in is not the user's: `<user_input
mode="…">` is unwrapped, `<user_command slash="x">` is the user's `/x …`, `<mode_notice>` and the
attached files' `<file_content>` are left out, as Cline's own transcript shows it. The title,
times and folder are the manifest's (the same fields as the session's row in `sessions.db`, which
is read when the manifest is missing): `metadata.title`, `started_at`, `ended_at`, and the
`workspace_root` or `cwd`, unless that is the shared folder Cline gives sessions started without a
project (`<data>/workspaces/chat`). A sub-agent's or team member's messages, kept beside the
session's as `<agent id>.messages.json`, are part of that session's task and are not read on their
own.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from importers._common import (
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    count_unknown,
    expand_home,
    parse_time,
    result_text,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, read_head, read_regular
from importers._sessions import SessionFileImporter
from importers._sqlite import connect, is_sqlite
from importers._touches import tool_use_touches
from importers.base import ImportReport
from importers.cline import data_folder
from storage.models import Conversation, Role

MESSAGES = ".messages.json"
INDEX = Path("db") / "sessions.db"  # beside `sessions/` in Cline's data folder
_SILENT_BLOCKS = {"thinking", "redacted_thinking"}
_WRAPPER = re.compile(r"</?user_input\b[^>]*>")
_COMMAND = re.compile(r'^\s*<user_command\b[^>]*\bslash="([^"]+)"[^>]*>(.*?)</user_command>\s*$', re.DOTALL)
_RUNTIME = re.compile(r"<(mode_notice|file_content)\b[^>]*>.*?</\1>\s*", re.DOTALL)


class ClineSdkImporter(SessionFileImporter):
    name = "cline-sdk"
    detect_depth = 3
    none_found = f"no Cline sessions (sessions/<id>/<id>{MESSAGES}) under {{path}}"
    variables: ClassVar[Mapping[str, str]] = {
        "CLINE_SESSION_DATA_DIR": "the folder of Cline's SDK sessions, in place of Cline's data folder's sessions/",
        "CLINE_DIR": "Cline's folder for its CLI and JetBrains hosts (default ~/.cline), whose data/ holds the tasks",
        "CLINE_DATA_DIR": "Cline's data folder, in place of CLINE_DIR/data",
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        configured = env.get("CLINE_SESSION_DATA_DIR", "").strip()
        return [expand_home(configured, home) if configured else data_folder(env, home) / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        own = folder / f"{folder.name}{MESSAGES}"  # the folder of one session
        if _is_session_file(own):
            return [own]
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        return sorted(f for f in root.glob(f"*/*{MESSAGES}") if _is_session_file(f))

    def context_files(self, session: Path) -> list[Path]:
        """Where the session's title and folder are read: its manifest, else the index of sessions."""
        candidates = (_manifest(session), session.parent.parent.parent / INDEX)
        return next(([file] for file in candidates if file.is_file()), [])

    def is_session(self, file: Path) -> bool:
        return _looks_like_messages(file)

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _is_session_file(file: Path) -> bool:
    """A session's own messages: `<id>/<id>.messages.json` (not a sub-agent's beside it)."""
    return file.name == f"{file.parent.name}{MESSAGES}" and file.is_file()


def _looks_like_messages(path: Path) -> bool:
    if not path.name.endswith(MESSAGES):
        return False
    head = read_head(path, 4096)
    return '"role"' in head and ('"messages"' in head or head.lstrip().startswith("["))


def _manifest(session: Path) -> Path:
    return session.parent / f"{session.parent.name}.json"


def _load(file: Path) -> Any:
    try:
        return json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff"))
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"not valid JSON ({exc})") from None


def _record(session: Path, session_id: str, report: ImportReport) -> dict[str, Any]:
    """The session's manifest, else its row in `sessions.db` (both use the row's column names)."""
    manifest = _manifest(session)
    if manifest.is_file():
        try:
            return as_dict(_load(manifest))
        except (Unusable, OSError):
            report.note(f"{manifest.name}: unreadable manifest; the session's index was read instead")
    index = session.parent.parent.parent / INDEX
    if not is_sqlite(index):
        return {}
    try:
        connection = connect(index)
    except sqlite3.Error:
        return {}
    try:
        connection.row_factory = sqlite3.Row
        row = connection.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            return {}
        record = dict(row)
        record["metadata"] = as_dict(_json(record.pop("metadata_json", None)))
        return record
    except sqlite3.Error:
        return {}
    finally:
        connection.close()


def _json(value: object) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):
        return None


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    document = _load(file)
    messages = as_list(document) if isinstance(document, list) else as_list(as_dict(document).get("messages"))
    session_id = as_id(as_dict(document).get("sessionId")) or file.parent.name
    record = _record(file, session_id, report)
    turns: list[Turn] = []
    for number, message in enumerate(messages):
        turns.extend(_turns(f"{session_id}#{number}", as_dict(message), unknown))
    folder = as_str(record.get("workspace_root")) or as_str(record.get("cwd"))
    return build_conversation(
        id=f"cline-sdk:{session_id}",
        source="cline-sdk",
        turns=turns,
        report=report,
        title=as_str(as_dict(record.get("metadata")).get("title")) or _typed(as_str(record.get("prompt"))),
        created_at=parse_time(record.get("started_at")),
        updated_at=parse_time(record.get("ended_at") or as_dict(document).get("updated_at")),
        project=None if _is_chat_workspace(folder) else folder or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _is_chat_workspace(folder: str) -> bool:
    """The folder Cline gives a session started without a project: `.cline/data/workspaces/chat`."""
    return [part for part in re.split(r"[\\/]+", folder) if part][-2:] == ["workspaces", "chat"]


def _turns(key: str, message: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    content, when = message.get("content"), parse_time(message.get("ts"))
    key = as_id(message.get("id")) or key
    role: Role
    if as_str(message.get("role")) == "user":
        role = "user"
    elif as_str(message.get("role")) == "assistant":
        role = "assistant"
    else:
        count_unknown(unknown, as_str(message.get("role")), "messages", "role")
        return []
    if isinstance(content, str):
        return [Turn(key, role, _typed(content) if role == "user" else content, when)]
    lines: list[str] = []
    results: list[Turn] = []
    for number, block in enumerate(as_list(content)):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            text = as_str(block.get("text"))
            lines.append(_typed(text) if role == "user" else text)
        elif kind == "tool_use":
            lines.append(summarise_tool_call(as_str(block.get("name")), block.get("input")))
        elif kind == "tool_result":
            text = summarise_tool_result(result_text(block.get("content")), error=block.get("is_error") is True)
            results.append(Turn(f"{key}:{number}", "tool", text, when))
        elif kind == "file":
            lines.append(f"[file {Path(as_str(block.get('path')).replace(chr(92), '/')).name or 'attached'}]")
        elif kind in {"image", "media"}:
            lines.append(f"[{kind}]")
        elif kind not in _SILENT_BLOCKS:
            count_unknown(unknown, kind, "content blocks")
    text = "\n\n".join(line for line in lines if line.strip())
    return [Turn(key, role, text, when, tool_use_touches(content)), *results]


def _typed(text: str) -> str:
    """What the user typed, out of what Cline's runtime wraps it in (as its transcript shows it)."""
    if "<" not in text:
        return text
    text = _RUNTIME.sub("", text)
    command = _COMMAND.match(text)
    if command:
        return f"/{command.group(1)} {command.group(2).strip()}".strip()
    return _WRAPPER.sub("", text).strip()
