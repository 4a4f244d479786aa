"""Qwen Code chat recordings: `<runtime dir>/projects/<project path, sanitised>/chats/<session id>.jsonl`,
the runtime dir being `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen` (on every OS).

Each line is a record `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, message}`, the
message in Gemini's API shape (`{role, parts}`). Records form a tree: like Qwen Code's own resume,
the conversation is the chain of parents from the last record back to the first, so turns a
`/rewind` abandoned are left out; records sharing a uuid (a streamed reply) are one message.
`user` and `assistant` records are the conversation, `tool_result` records the tools' output;
`system` records are bookkeeping, except `custom_title` (the title `/rename` or Qwen Code's own
titling gave the session, the last one winning, as in its session list). Thoughts are left out.
A message with an `@path` carries the files it pulled in as more parts (from `--- Content from
referenced files ---` on); the user typed only what comes before them, which the `at_command`
record written just before the message also keeps (`userText`, in newer versions).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from importers._common import (
    Turn,
    UnknownCounts,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    count_unknown,
    expand_home,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, iter_jsonl, read_head
from importers._sessions import SessionFileImporter
from importers._touches import touches_in
from importers.base import ImportReport
from storage.models import Conversation


def runtime_folder(env: Mapping[str, str], home: Path) -> Path:
    for variable in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        configured = env.get(variable, "").strip()
        if configured:
            return expand_home(configured, home)
    return home / ".qwen"


class QwenCodeImporter(SessionFileImporter):
    name = "qwen-code"
    # `--resume` takes a session id among the project's sessions: it runs in the session's folder.
    resume: ClassVar[tuple[str, ...]] = ("qwen", "--resume", "{session}")
    detect_depth = 4
    none_found = "no Qwen Code sessions (projects/*/chats/*.jsonl) under {path}"
    variables: ClassVar[Mapping[str, str]] = {
        "QWEN_HOME": "Qwen Code's home folder (default ~/.qwen), whose projects/ holds the sessions",
        "QWEN_RUNTIME_DIR": "Qwen Code's runtime folder, which holds projects/ in place of QWEN_HOME",
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [runtime_folder(env, home) / "projects"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "projects" if (folder / "projects").is_dir() else folder
        found = set(root.glob("*/chats/*.jsonl")) | set(root.glob("chats/*.jsonl")) | set(root.glob("*.jsonl"))
        return sorted(f for f in found if f.is_file())

    def is_session(self, file: Path) -> bool:
        return _looks_like_recording(file)

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _looks_like_recording(path: Path) -> bool:
    """Qwen Code's first record: a uuid, session and cwd, a Gemini-shaped message or a system payload,
    and none of the fields Claude Code writes on every record (whose transcripts look alike)."""
    if path.suffix != ".jsonl":
        return False
    first = read_head(path, 65536).split("\n", 1)[0]
    if '"isSidechain"' in first or '"userType"' in first:
        return False
    has_ids = all(f'"{key}"' in first for key in ("uuid", "sessionId", "cwd"))
    return has_ids and ('"parts"' in first or '"systemPayload"' in first)


def _chain(file: Path, report: ImportReport) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """(the records of the current branch in order, one per uuid with its parts merged; the first
    record; the session's title). The title is the last one in the file, on whatever branch, as the
    session list reads it."""
    by_uuid: dict[str, list[dict[str, Any]]] = {}
    last = title = ""
    first: dict[str, Any] = {}
    for _, record in iter_jsonl(file, report):
        record = as_dict(record)
        if as_str(record.get("subtype")) == "custom_title":
            title = as_str(as_dict(record.get("systemPayload")).get("customTitle")).strip() or title
        uuid = as_id(record.get("uuid"))
        if not uuid:
            continue
        first = first or record
        by_uuid.setdefault(uuid, []).append(record)
        last = uuid
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while last and last not in seen and last in by_uuid:
        seen.add(last)
        records = by_uuid[last]
        merged = dict(records[0])
        parts = [part for record in records for part in as_list(as_dict(record.get("message")).get("parts"))]
        if parts:
            merged["message"] = {**as_dict(records[0].get("message")), "parts": parts}
        for record in records[1:]:
            for key in ("toolCallResult", "systemPayload"):
                merged.setdefault(key, record.get(key))
        chain.append(merged)
        last = as_id(records[0].get("parentUuid"))
    chain.reverse()
    return chain, first, title


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    chain, first, title = _chain(file, report)
    turns: list[Turn] = []
    typed = ""  # what the user typed with an @path, as the `at_command` record before their message keeps it
    for record in chain:
        kind, key, when = as_str(record.get("type")), as_id(record.get("uuid")), parse_time(record.get("timestamp"))
        parts = [as_dict(part) for part in as_list(as_dict(record.get("message")).get("parts"))]
        if kind == "system" and as_str(record.get("subtype")) == "at_command":
            typed = as_str(as_dict(record.get("systemPayload")).get("userText"))
        elif kind == "user":
            turns.append(Turn(key, "user", typed.strip() or _typed_text(parts), when))
            typed = ""
        elif kind == "assistant":
            calls = [as_dict(p.get("functionCall")) for p in parts if isinstance(p.get("functionCall"), dict)]
            lines = [_text(parts), *(summarise_tool_call(as_str(c.get("name")), c.get("args")) for c in calls)]
            touched = touches_in((as_str(c.get("name")), c.get("args")) for c in calls)
            turns.append(Turn(key, "assistant", "\n\n".join(line for line in lines if line.strip()), when, touched))
        elif kind == "tool_result":
            turns.extend(_results(key, parts, as_dict(record.get("toolCallResult")), when))
        elif kind != "system":
            count_unknown(unknown, kind)
    session = as_id(first.get("sessionId")) or file.stem
    return build_conversation(
        id=f"qwen-code:{session}",
        source="qwen-code",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(first.get("timestamp")),
        project=as_str(first.get("cwd")) or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _text(parts: list[dict[str, Any]]) -> str:
    """The text parts, thoughts left out."""
    return "".join(as_str(part.get("text")) for part in parts if not part.get("thought"))


def _typed_text(parts: list[dict[str, Any]]) -> str:
    """A user message's text without what an @path pulled in after it: the parts from the
    `--- Content from referenced files ---` marker (or a folder's `Showing up to N items` listing) on."""
    typed: list[dict[str, Any]] = []
    for part in parts:
        text = as_str(part.get("text")).lstrip()
        if typed and text.startswith(_REFERENCED):
            break
        typed.append(part)
    return _text(typed).split(_REFERENCED[0], 1)[0].rstrip()


_REFERENCED = ("--- Content from referenced files ---", "Showing up to ")


def _results(key: str, parts: list[dict[str, Any]], result: dict[str, Any], when: Any) -> list[Turn]:
    turns = []
    for number, part in enumerate(parts):
        response = as_dict(part.get("functionResponse"))
        if not response:
            continue
        body = as_dict(response.get("response"))
        error = "error" in body and not as_str(body.get("output"))
        text = as_str(body.get("output")) or as_str(body.get("error")) or as_str(body.get("content"))
        if not text and body:
            text = json.dumps(body, ensure_ascii=False)
        if not text:
            display = result.get("resultDisplay")
            text = display if isinstance(display, str) else ""
        turns.append(Turn(f"{key}:{number}", "tool", summarise_tool_result(text, error=error), when))
    return turns
