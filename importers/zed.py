"""Zed's agent threads: the SQLite database `threads/threads.db` in Zed's data folder
(`$XDG_DATA_HOME/zed` or `~/.local/share/zed` on Linux, `~/Library/Application Support/Zed` on macOS,
`%LOCALAPPDATA%\\Zed` on Windows).

One row per thread: its title (`summary`), `updated_at` and (since late 2025) `created_at`,
`folder_paths` (the project's folders, one per line) and `parent_id` (a subagent's thread), and the
thread itself as JSON in `data`, zstd-compressed when `data_type` is `zstd`. Threads of the current
agent (`version` 0.3.0) hold messages `{"User": {content}}`, `{"Agent": {content, tool_results}}`
or `"Resume"`; threads of Zed's first agent (no version, or 0.1/0.2) hold `{role, segments,
tool_uses, tool_results}`, which Zed still opens, and so are read too. Text is the conversation;
thinking is left out, and so are the files a message @-mentions (their contents, not what was typed);
tool calls become one short line, their results another.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import zstandard

from importers._common import (
    RECORD_ERRORS,
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_list,
    as_str,
    build_conversation,
    count_unknown,
    env_folder,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._sqlite import MAX_VALUE_BYTES, DatabaseImporter, Oversized, bounded_value
from importers._touches import touches_in, touches_of
from importers.base import ImportReport
from storage.models import Conversation, Touch

DB_NAME = "threads.db"
_FED = 512  # compressed bytes decompressed at a time: at most ~16 MB of output each


def data_folder(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Zed"
    if platform.startswith(("win", "cygwin")):
        return env_folder(env, "LOCALAPPDATA", home, "AppData", "Local") / "Zed"
    return env_folder(env, "XDG_DATA_HOME", home, ".local", "share") / "zed"


class ZedImporter(DatabaseImporter):
    name = "zed"
    variables = system_folders("XDG_DATA_HOME", "LOCALAPPDATA")
    database_name = DB_NAME
    tables = frozenset({"threads"})
    kind = "a Zed threads database"
    none_found = f"no Zed threads database ({DB_NAME}) in {{path}}"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [data_folder(env, home, platform) / "threads" / DB_NAME]

    def session_files(self, folder: Path) -> list[Path]:
        found = [folder / DB_NAME, folder / "threads" / DB_NAME]
        return [f for f in found if f.is_file()]

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        return _read_database(connection, where, report, unknown)


def _read_database(
    connection: sqlite3.Connection, where: str, report: ImportReport, unknown: UnknownCounts
) -> Iterator[Conversation]:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(threads)")}
    created = "created_at" if "created_at" in columns else "NULL"
    folders = "folder_paths" if "folder_paths" in columns else "NULL"
    rows = connection.execute(
        f"SELECT rowid, id, summary, updated_at, {created}, {folders}, data_type FROM threads ORDER BY updated_at, id"
    )
    for rowid, thread_id, title, updated, created_at, folder_paths, data_type in rows:
        try:
            thread = _thread(data_type, bounded_value(connection, "threads", "data", rowid))
            yield build_conversation(
                id=f"zed:{thread_id}",
                source="zed",
                turns=_turns(as_list(thread.get("messages")), unknown),
                report=report,
                title=as_str(title) or as_str(thread.get("title")) or as_str(thread.get("summary")),
                created_at=parse_time(created_at),
                updated_at=parse_time(updated) or parse_time(thread.get("updated_at")),
                project=next((line for line in as_str(folder_paths).splitlines() if line.strip()), None),
            )
        except Unusable as exc:
            report.skip(f"{where}, thread {thread_id}", str(exc))
        except Oversized as exc:
            report.skip(f"{where}, thread {thread_id}", f"not read: {exc}")
        except RECORD_ERRORS as exc:
            report.skip(f"{where}, thread {thread_id}", f"malformed thread: {exc}")


def _thread(data_type: object, data: object) -> dict[str, Any]:
    raw = data if isinstance(data, bytes) else as_str(data).encode("utf-8")
    if data_type == "zstd":
        raw = _decompressed(raw)
    elif data_type != "json":
        raise Unusable(f"unknown data type {data_type!r}")
    try:
        thread = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"its data is not valid JSON ({exc})") from None
    if not isinstance(thread, dict):
        raise Unusable("its data is not a JSON object")
    return thread


def _decompressed(raw: bytes) -> bytes:
    """A zstd frame's content, up to MAX_VALUE_BYTES and no further: the size a frame declares is not
    trusted (`decompress` makes room for all of it, whatever its cap). The frame is fed a little at a
    time, since one block of it turns a few bytes into 128 KB."""
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    chunks: list[bytes] = []
    held = 0
    try:
        for at in range(0, len(raw), _FED):
            chunk = decompressor.decompress(raw[at : at + _FED])
            chunks.append(chunk)
            held += len(chunk)
            if held > MAX_VALUE_BYTES:
                raise Unusable(
                    f"its data decompresses to more than the {MAX_VALUE_BYTES // 1024**2} MB a chat is read up to"
                )
            if decompressor.eof:
                break
    except zstandard.ZstdError as exc:
        raise Unusable(f"its data cannot be decompressed ({exc})") from None
    if not decompressor.eof:
        raise Unusable("its data cannot be decompressed (the frame is cut short)")
    return b"".join(chunks)


def _turns(messages: list[Any], unknown: UnknownCounts) -> list[Turn]:
    turns: list[Turn] = []
    for message in messages:
        if message == "Resume":
            continue  # Zed's marker for "continued after the tool-use limit"
        message = as_dict(message)
        if "User" in message:
            turns.append(Turn("", "user", _user_text(as_list(as_dict(message["User"]).get("content")))))
        elif "Agent" in message:
            turns.extend(_agent_turns(as_dict(message["Agent"])))
        elif "role" in message:
            turns.extend(_first_agent_turns(message))
        else:
            count_unknown(unknown, next(iter(message), ""), "messages", "kind")
    return turns


def _user_text(content: list[Any]) -> str:
    texts = []
    for item in content:
        item = as_dict(item)
        if isinstance(item.get("Text"), str):
            texts.append(item["Text"])
        elif "Image" in item:
            texts.append("[image]")
    return "\n".join(texts)


def _agent_turns(agent: dict[str, Any]) -> list[Turn]:
    lines: list[str] = []
    touched: list[Touch] = []
    for item in as_list(agent.get("content")):
        item = as_dict(item)
        if isinstance(item.get("Text"), str):
            lines.append(item["Text"])
        elif "ToolUse" in item:
            use = as_dict(item["ToolUse"])
            lines.append(summarise_tool_call(as_str(use.get("name")), use.get("input") or use.get("raw_input")))
            touched += touches_of(as_str(use.get("name")), use.get("input") or use.get("raw_input"))
    results = [
        Turn(
            "",
            "tool",
            summarise_tool_result(_result_text(as_dict(r).get("content")), error=bool(as_dict(r).get("is_error"))),
        )
        for r in as_dict(agent.get("tool_results")).values()
    ]
    return [
        Turn("", "assistant", "\n\n".join(line for line in lines if line.strip()), touches=tuple(touched)),
        *results,
    ]


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    content = as_dict(content)
    return as_str(content.get("Text")) or ("[image]" if "Image" in content else "")


def _first_agent_turns(message: dict[str, Any]) -> list[Turn]:
    """A message of Zed's first agent: text segments (thinking left out), tool uses and results."""
    role = as_str(message.get("role"))
    if role not in {"user", "assistant"}:
        return []
    segments = [as_dict(s) for s in as_list(message.get("segments"))]
    lines = [as_str(s.get("text")) for s in segments if as_str(s.get("type")) == "text"]
    uses = [as_dict(u) for u in as_list(message.get("tool_uses"))]
    lines += [summarise_tool_call(as_str(u.get("name")), u.get("input")) for u in uses]
    touched = touches_in((as_str(u.get("name")), u.get("input")) for u in uses)
    results = [
        Turn(
            "",
            "tool",
            summarise_tool_result(_result_text(as_dict(r).get("content")), error=bool(as_dict(r).get("is_error"))),
        )
        for r in as_list(message.get("tool_results"))
    ]
    return [
        Turn(
            "",
            "user" if role == "user" else "assistant",
            "\n\n".join(line for line in lines if line.strip()),
            touches=touched,
        ),
        *results,
    ]
