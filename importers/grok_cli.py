"""Grok CLI (superagent-ai/grok-cli) sessions: the SQLite database `~/.grok/grok.db` (on every OS),
kept since 1.0 (March 2026); earlier releases kept no chats.

`sessions` holds each session's `title` (generated from the first prompt), `cwd_at_start` (its
folder) and times (ISO 8601); `messages` the session's messages in order (`seq`), each a Vercel AI
SDK `ModelMessage` as JSON (`message_json`) with its time. A user message is a string, or parts
(`text`, and `file`/`image` for an image the prompt named); an assistant's, a string or `text`,
`reasoning` (left out) and `tool-call` parts; a `tool` message's `tool-result` parts carry an
`output` (`json` whose value is Grok's `{success, output, error}`, `text`, `error-text`...). `system`
rows are the notices of background delegations Grok CLI itself adds: nobody's words. A compaction
writes its summary to `compactions` and keeps every message row, so the whole session is read. A
session Grok CLI opened with nothing said in it is not a chat. Schema versions 1-3 (`user_version`;
2 added `compactions`, 3 the recap columns) hold the same rows for this.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

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
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._sqlite import DatabaseImporter, json_value
from importers._touches import touches_in
from importers.base import ImportReport
from storage.models import Conversation

DB_NAME = "grok.db"
# Parts that are the model's bookkeeping or its reasoning, not its reply.
_SILENT_PARTS = {"reasoning", "tool-approval-request", "tool-approval-response", "source"}


class GrokCliImporter(DatabaseImporter):
    name = "grok-cli"
    variables: ClassVar[Mapping[str, str]] = {}
    database_name = DB_NAME
    tables = frozenset({"sessions", "messages"})
    kind = "a Grok CLI database"
    none_found = f"no Grok CLI database ({DB_NAME}) in {{path}} or its .grok folder"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [home / ".grok" / DB_NAME]

    def session_files(self, folder: Path) -> list[Path]:
        found = [folder / DB_NAME, folder / ".grok" / DB_NAME]
        return [file for file in found if file.is_file()]

    def where(self, path: Path, database: Path) -> str:
        return str(database.relative_to(path)) if database != path else database.name

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        sessions = connection.execute(
            "SELECT id, title, cwd_at_start, created_at, updated_at FROM sessions AS s "
            "WHERE EXISTS (SELECT 1 FROM messages WHERE session_id = s.id) ORDER BY created_at, id"
        ).fetchall()
        for session_id, title, cwd, created, updated in sessions:
            try:
                rows = connection.execute(
                    "SELECT seq, role, message_json, created_at FROM messages WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                ).fetchall()
                turns = [turn for row in rows for turn in _turns(*row, report=report, unknown=unknown)]
                yield build_conversation(
                    id=f"grok-cli:{as_id(session_id)}",
                    source="grok-cli",
                    turns=turns,
                    report=report,
                    title=as_str(title),
                    created_at=parse_time(created),
                    updated_at=parse_time(updated),
                    project=as_str(cwd) or None,
                )
            except Unusable as exc:
                report.skip(f"{where}, session {session_id}", str(exc))
            except RECORD_ERRORS as exc:
                report.skip(f"{where}, session {session_id}", f"malformed session: {exc}")


def _turns(
    seq: object, role: object, message_json: object, created: object, *, report: ImportReport, unknown: UnknownCounts
) -> list[Turn]:
    message = json_value(message_json)
    if not isinstance(message, dict):
        report.note("some Grok CLI messages were not JSON objects and were left out")
        return []
    key, when = as_id(seq), parse_time(created)
    kind = as_str(message.get("role")) or as_str(role)
    content = message.get("content")
    if kind == "user":
        return [Turn(key, "user", _user_text(content, unknown), when)]
    if kind == "assistant":
        calls = [part for part in map(as_dict, as_list(content)) if part.get("type") == "tool-call"]
        touched = touches_in((as_str(part.get("toolName")), part.get("input")) for part in calls)
        return [Turn(key, "assistant", _assistant_text(content, unknown), when, touched)]
    if kind == "tool":
        results = [as_dict(part) for part in as_list(content) if as_dict(part).get("type") == "tool-result"]
        return [Turn(f"{key}:{n}", "tool", _result(part.get("output")), when) for n, part in enumerate(results)]
    if kind != "system":
        count_unknown(unknown, kind, "messages", "role")
    return []


def _user_text(content: object, unknown: UnknownCounts) -> str:
    if isinstance(content, str):
        return content
    lines = []
    for part in map(as_dict, as_list(content)):
        kind = as_str(part.get("type"))
        if kind == "text":
            lines.append(as_str(part.get("text")))
        elif kind in {"image", "file"}:
            # The image's bytes (or its URL); the prompt's text names it already.
            lines.append(f"[{'file ' + as_str(part.get('filename')) if part.get('filename') else 'image'}]")
        else:
            count_unknown(unknown, kind, "parts")
    return "\n\n".join(line for line in lines if line.strip())


def _assistant_text(content: object, unknown: UnknownCounts) -> str:
    if isinstance(content, str):
        return content
    text: list[str] = []
    calls: list[str] = []
    for part in map(as_dict, as_list(content)):
        kind = as_str(part.get("type"))
        if kind == "text":
            text.append(as_str(part.get("text")))
        elif kind == "tool-call":
            calls.append(summarise_tool_call(as_str(part.get("toolName")), part.get("input")))
        elif kind not in _SILENT_PARTS:
            count_unknown(unknown, kind, "parts")
    return "\n\n".join(line for line in ["".join(text).strip(), *calls] if line)


def _result(output: object) -> str:
    """A tool's result: Grok's own `{success, output, error}` inside a `json` output, or the text of
    any other kind of output."""
    output = as_dict(output)
    kind, value = as_str(output.get("type")), output.get("value")
    if kind == "json" and isinstance(value, dict) and "success" in value:
        failed = not value.get("success")
        text = as_str(value.get("error")) if failed else as_str(value.get("output"))
        return summarise_tool_result(text or as_str(value.get("output")), error=failed)
    if kind == "content":
        value = " ".join(as_str(as_dict(part).get("text")) for part in as_list(value))
    if kind == "execution-denied":
        return summarise_tool_result(as_str(output.get("reason")) or "denied", error=True)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return summarise_tool_result(text, error=kind.startswith("error"))
