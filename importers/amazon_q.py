"""Amazon Q Developer CLI and Kiro CLI chats: the SQLite database `data.sqlite3` in the platform's
local data folder (`$XDG_DATA_HOME`, else `~/.local/share`, on Linux; `~/Library/Application
Support` on macOS; `%LOCALAPPDATA%` on Windows), under `amazon-q/` for `q chat` and `kiro-cli/` for
Kiro CLI, which grew out of it and writes the same rows.

`q chat` (1.10 and later) keeps the conversation of each folder it ran in as one row of the table
`conversations` (`key`: the folder, `value`: the conversation state as JSON); a new chat in the same
folder replaces the row. Kiro CLI adds `conversations_v2` (`key`, `conversation_id`, `value`,
`created_at`, `updated_at` in Unix milliseconds), several chats per folder.

A conversation state holds `conversation_id` and `history`: until 1.13 a list of `[user, assistant]`
pairs, since then of `{user, assistant, request_metadata}` (the request's start and end times in
Unix milliseconds). A user message's `content` is one of `{"Prompt": {prompt}}` (what was typed),
`{"ToolUseResults": {tool_use_results}}` and `{"CancelledToolUses": {prompt, tool_use_results}}`; its
`timestamp` (1.14 and later) is RFC 3339. The context Q adds to a prompt (`additional_context`, the
environment in `env_context`) is kept apart from it and is not read. An assistant message is
`{"Response": {message_id, content}}` or `{"ToolUse": {message_id, content, tool_uses}}`. The state's
`transcript` is the human-readable log of every prompt (`> …`) and reply (ending `[Tool uses: …]`),
kept across `/clear` (which empties `history`) and `/compact` (which replaces it with a summary):
when it holds prompts the history no longer does, the chat is read from it (without the tools'
output, which it does not keep).

`q chat` is open source (its migrations and `ConversationState` are the shapes here); Kiro CLI is
not, and its `conversations_v2` table is as its own crash reports print the statement creating it.
Kiro CLI's newer file store (`~/.kiro/sessions/cli/<id>.jsonl`) has no public writer and is not read.
"""

from __future__ import annotations

import json
import re
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
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._files import file_time
from importers._sqlite import is_sqlite, json_value, read_databases, table_names
from importers._touches import VERBS, touches_in, touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation, Touch

DB_NAME = "data.sqlite3"


def local_data(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """The platform's local data folder, as the Rust `dirs` crate both CLIs use names it."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith(("win", "cygwin")):
        return env_folder(env, "LOCALAPPDATA", home, "AppData", "Local")
    return env_folder(env, "XDG_DATA_HOME", home, ".local", "share")


class AmazonQImporter(AgentLogImporter):
    """`q chat`: `<local data>/amazon-q/data.sqlite3`."""

    name = "amazon-q"
    database = True
    folder = "amazon-q"
    variables: ClassVar[Mapping[str, str]] = system_folders("XDG_DATA_HOME", "LOCALAPPDATA")

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [local_data(env, home, platform) / self.folder / DB_NAME]

    def session_files(self, folder: Path) -> list[Path]:
        database = folder / DB_NAME if folder.name == self.folder else folder / self.folder / DB_NAME
        return [database] if database.is_file() else []

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.name == DB_NAME and path.parent.name == self.folder and is_sqlite(path)
        return path.is_dir() and any(is_sqlite(file) for file in self.session_files(path))

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        databases = [path] if path.is_file() else self.session_files(path)
        if not databases:
            raise SourceError(f"no {self.name} database ({self.folder}/{DB_NAME}) in {path}")
        unknown: UnknownCounts = {}
        yield from read_databases(
            databases,
            report,
            {"conversations"},
            "an Amazon Q or Kiro CLI database",
            lambda database, where, connection: _read_database(
                self.name, connection, where, file_time(database), report, unknown
            ),
        )
        note_unknown(report, unknown)


class KiroCliImporter(AmazonQImporter):
    """Kiro CLI: `<local data>/kiro-cli/data.sqlite3`."""

    name = "kiro-cli"
    folder = "kiro-cli"


def _rows(connection: sqlite3.Connection) -> list[tuple[str, object, object, object]]:
    """(folder, state, created, updated) of every chat, Kiro CLI's own table first: a chat it moved
    there from the old table is read once, in its newer form."""
    rows: list[tuple[str, object, object, object]] = []
    if "conversations_v2" in table_names(connection):
        rows += connection.execute(
            "SELECT key, value, created_at, updated_at FROM conversations_v2 ORDER BY created_at, rowid"
        ).fetchall()
    rows += [(key, value, None, None) for key, value in connection.execute("SELECT key, value FROM conversations")]
    return rows


def _read_database(
    source: str,
    connection: sqlite3.Connection,
    where: str,
    fallback: datetime,
    report: ImportReport,
    unknown: UnknownCounts,
) -> Iterator[Conversation]:
    seen: set[str] = set()
    for folder, value, created, updated in _rows(connection):
        state = as_dict(json_value(value))
        conversation_id = as_id(state.get("conversation_id"))
        label = f"{where}, {as_str(folder) or 'a row'}"
        if not conversation_id:
            report.skip(label, "not a conversation (no conversation_id)")
            continue
        if conversation_id in seen:
            continue
        seen.add(conversation_id)
        try:
            yield build_conversation(
                id=f"{source}:{conversation_id}",
                source=source,
                turns=_conversation(state, unknown),
                report=report,
                created_at=parse_time(created),
                updated_at=parse_time(updated),
                project=as_str(folder) or _working_directory(state) or None,
                fallback_time=fallback,
            )
        except Unusable as exc:
            report.skip(f"{label}, conversation {conversation_id}", str(exc))
        except RECORD_ERRORS as exc:
            report.skip(f"{label}, conversation {conversation_id}", f"malformed conversation: {exc}")


def _entries(state: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(user, assistant, request metadata) of each exchange, in either shape `history` has had."""
    for entry in as_list(state.get("history")):
        if isinstance(entry, list) and len(entry) == 2:
            yield as_dict(entry[0]), as_dict(entry[1]), {}
        else:
            entry = as_dict(entry)
            yield as_dict(entry.get("user")), as_dict(entry.get("assistant")), as_dict(entry.get("request_metadata"))


def _variant(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A Rust enum as serde writes it: `{"Variant": {fields}}`."""
    if len(value) != 1:
        return "", {}
    ((kind, fields),) = value.items()
    return kind, as_dict(fields)


def _conversation(state: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    """The history's turns, or the transcript's when it holds prompts the history no longer does
    (`/clear` empties the history and `/compact` replaces it with a summary; the transcript keeps
    every prompt and reply)."""
    turns = _turns(state, unknown)
    said = _transcript(state)
    asked = sum(turn.role == "user" for turn in turns)
    if sum(turn.role == "user" for turn in said) <= asked:
        return turns
    first = min((turn.created_at for turn in turns if turn.created_at), default=None)
    return [Turn(turn.key, turn.role, turn.text, first) for turn in said]


_TOOL_USES = re.compile(r"\n\[Tool uses: ([^\]\n]*)\]\Z")


def _transcript(state: dict[str, Any]) -> list[Turn]:
    """The transcript's prompts (`> …`, a line break written as `> ` and one) and replies (ending in
    `[Tool uses: …]`); slash commands and the CLI's own notices (errors, sign-in) are left out."""
    turns = []
    for number, entry in enumerate(as_list(state.get("transcript"))):
        entry = as_str(entry)
        if entry.startswith("> "):
            prompt = entry[2:].replace("> \n", "\n")
            if prompt.strip() and not prompt.startswith("/"):
                turns.append(Turn(f"t{number}", "user", prompt))
            continue
        uses = _TOOL_USES.search(entry)
        if uses:
            names = [name.strip() for name in uses.group(1).split(",") if name.strip() and name.strip() != "none"]
            lines = [entry[: uses.start()].strip(), *(f"[tool {name}]" for name in names)]
            turns.append(Turn(f"t{number}", "assistant", "\n\n".join(line for line in lines if line)))
    return turns


def _turns(state: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    turns: list[Turn] = []
    for number, (user, assistant, metadata) in enumerate(_entries(state)):
        asked = parse_time(user.get("timestamp")) or parse_time(metadata.get("request_start_timestamp_ms"))
        answered = parse_time(metadata.get("stream_end_timestamp_ms")) or asked
        kind, fields = _variant(as_dict(user.get("content")))
        if kind in {"Prompt", "CancelledToolUses"}:
            turns.append(Turn(f"{number}:user", "user", as_str(fields.get("prompt")), asked))
        if kind in {"ToolUseResults", "CancelledToolUses"}:
            for result_number, result in enumerate(as_list(fields.get("tool_use_results"))):
                turns.append(Turn(f"{number}:result{result_number}", "tool", _result(as_dict(result)), asked))
        elif kind != "Prompt":
            count_unknown(unknown, kind, "user messages", "content")
        kind, fields = _variant(assistant)
        if kind not in {"Response", "ToolUse"}:
            count_unknown(unknown, kind, "assistant messages", "kind")
            continue
        calls = [as_dict(call) for call in as_list(fields.get("tool_uses"))]
        lines = [as_str(fields.get("content")), *(_call(call) for call in calls)]
        key = as_id(fields.get("message_id")) or f"{number}:assistant"
        touched = tuple(touch for call in calls for touch in _touched(call))
        turns.append(Turn(key, "assistant", "\n\n".join(line for line in lines if line.strip()), answered, touched))
    return turns


def _touched(call: dict[str, Any]) -> tuple[Touch, ...]:
    """What a call touched: `fs_write` says what it does in `command` (create, str_replace, append), as
    Anthropic's editor tool does; `fs_read` reads a file in each of its operations."""
    name, arguments = as_str(call.get("orig_name")) or as_str(call.get("name")), as_dict(call.get("args"))
    if name == "fs_write":
        return touches_of("str_replace_editor", arguments)
    if name == "fs_read":
        operations = as_list(arguments.get("operations")) or [arguments]
        return touches_in(("read", as_dict(operation)) for operation in operations)
    return touches_of(name, arguments, _VERBS)


# Amazon Q's and Kiro's own name for running a command on Windows, beside the shared ones.
_VERBS: Mapping[str, Action] = {**VERBS, "execute_cmd": "ran"}


def _call(call: dict[str, Any]) -> str:
    return summarise_tool_call(as_str(call.get("orig_name")) or as_str(call.get("name")), call.get("args"))


def _result(result: dict[str, Any]) -> str:
    """A tool's output: its `{"Text": ...}` and `{"Json": ...}` blocks."""
    texts = []
    for block in as_list(result.get("content")):
        block = as_dict(block)
        if isinstance(block.get("Text"), str):
            texts.append(block["Text"])
        elif "Json" in block:
            texts.append(json.dumps(block["Json"], ensure_ascii=False)[:400])
    return summarise_tool_result(" ".join(texts), error=as_str(result.get("status")) == "Error")


def _working_directory(state: dict[str, Any]) -> str:
    for user, _, _ in _entries(state):
        folder = as_str(as_dict(as_dict(user.get("env_context")).get("env_state")).get("current_working_directory"))
        if folder:
            return folder
    return ""
