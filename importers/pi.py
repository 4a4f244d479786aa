"""pi (the coding agent of pi-mono) sessions: `<agent dir>/sessions/--<cwd, separators as ->--/
<time>_<session id>.jsonl`, the agent dir being `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (on every OS).

The first line is the header `{"type": "session", "version", "id", "timestamp", "cwd"}`; each line
after it an entry `{type, id, parentId, timestamp}` (version 1 had no ids: its entries are one line
of turns). Entries form a tree: the conversation is the chain of parents from the last entry back,
as pi's own resume takes it, so a branch left by `/tree` is not read. `message` entries hold the
messages: `user` (a string or text and image parts), `assistant` (text, thinking and tool-call
parts), `toolResult`, `bashExecution` (a `!command` the user ran); the summaries pi writes itself
(`branchSummary`, `compactionSummary`) and the messages extensions add (`custom`, `hookMessage`
before version 3) are not what anyone said. The session's name is its last `session_info` entry's.

What pi puts into a prompt is taken out again: the body of a skill invoked with `/skill:name` (a
`<skill name=... location=...>` block) and files given on the command line as `@file`
(`<file name="...">` blocks) become one short line each; thinking is left out.
"""

from __future__ import annotations

import re
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
    env_folder,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, iter_jsonl, read_head
from importers._sessions import SessionFileImporter
from importers._touches import ran, touches_in
from importers.base import ImportReport
from storage.models import Conversation

_SKILL = re.compile(r'\A<skill name="([^"]+)" location="[^"]+">\n.*?\n</skill>(?:\n\n(.*))?\Z', re.DOTALL)
_FILE_NAME = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_.+\.jsonl\Z")
_FILE = re.compile(r'<file name="([^"]+)">.*?</file>\n?', re.DOTALL)
# Messages pi or its extensions wrote into the context: nobody's words.
_NOT_SAID = {"custom", "hookMessage", "branchSummary", "compactionSummary"}
# Entries that are settings and bookkeeping, not messages.
_BOOKKEEPING = {"model_change", "thinking_level_change", "compaction", "branch_summary", "custom", "custom_message"}
_BOOKKEEPING |= {"label", "session_info", "session", "event"}


def agent_folder(env: Mapping[str, str], home: Path) -> Path:
    return env_folder(env, "PI_CODING_AGENT_DIR", home, ".pi", "agent")


class PiImporter(SessionFileImporter):
    name = "pi"
    detect_depth = 2
    none_found = "no pi sessions (sessions/--<folder>--/*.jsonl) under {path}"
    variables: ClassVar[Mapping[str, str]] = {
        "PI_CODING_AGENT_DIR": "pi's agent folder (default ~/.pi/agent), whose sessions/ holds the sessions"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [agent_folder(env, home) / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        found = set(root.glob("*/*.jsonl")) | set(root.glob("*.jsonl"))
        return sorted(file for file in found if file.is_file())

    def is_session(self, file: Path) -> bool:
        return _looks_like_session(file)

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _looks_like_session(path: Path) -> bool:
    """pi's session file: named `<time>_<session id>.jsonl` (in a `--<folder>--` folder unless
    `--session-dir` moved it), its first line a session header with an id, a time and a folder.
    Other agents write look-alike headers; the name tells pi's apart."""
    if path.suffix != ".jsonl" or not _FILE_NAME.match(path.name):
        return False
    first = read_head(path, 8192).split("\n", 1)[0].replace(" ", "")
    return first.startswith('{"type":"session"') and all(f'"{key}"' in first for key in ("id", "timestamp", "cwd"))


def _chain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The current branch: parents from the last entry back (version 1: every entry, in order)."""
    by_id = {as_id(entry.get("id")): entry for entry in entries if as_id(entry.get("id"))}
    if not by_id:
        return entries
    last = next(as_id(entry.get("id")) for entry in reversed(entries) if as_id(entry.get("id")))
    chain: list[dict[str, Any]] = []
    while last and last in by_id and len(chain) <= len(by_id):
        chain.append(by_id[last])
        last = as_id(by_id[last].get("parentId"))
    return chain[::-1]


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    header: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    title = ""
    for _, value in iter_jsonl(file, report):
        entry = as_dict(value)
        kind = as_str(entry.get("type"))
        if kind == "session" and not header:
            header = entry
        elif kind == "session_info":
            title = as_str(entry.get("name")).strip() or title
        elif entry:
            entries.append(entry)
    turns: list[Turn] = []
    for number, entry in enumerate(_chain(entries)):
        kind = as_str(entry.get("type"))
        if kind == "message":
            turns.extend(_message(as_id(entry.get("id")) or str(number), entry, unknown))
        elif kind not in _BOOKKEEPING:
            count_unknown(unknown, kind, "entries")
    session = as_id(header.get("id")) or file.stem.rsplit("_", 1)[-1]
    return build_conversation(
        id=f"pi:{session}",
        source="pi",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(header.get("timestamp")),
        project=as_str(header.get("cwd")) or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _message(key: str, entry: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    message = as_dict(entry.get("message"))
    role = as_str(message.get("role"))
    when = parse_time(message.get("timestamp")) or parse_time(entry.get("timestamp"))
    if role == "user":
        return [Turn(key, "user", _typed(_text(message.get("content"))), when)]
    if role == "assistant":
        parts = [as_dict(part) for part in as_list(message.get("content"))]
        lines = [_text(parts)]
        lines += [
            summarise_tool_call(as_str(part.get("name")), part.get("arguments"))
            for part in parts
            if part.get("type") == "toolCall"
        ]
        calls = [(as_str(part.get("name")), part.get("arguments")) for part in parts if part.get("type") == "toolCall"]
        text = "\n\n".join(line for line in lines if line.strip())
        return [Turn(key, "assistant", text, when, touches_in(calls))]
    if role == "toolResult":
        text = summarise_tool_result(_text(message.get("content")), error=bool(message.get("isError")))
        return [Turn(key, "tool", text, when)]
    if role == "bashExecution":
        output = as_str(message.get("output"))
        code = message.get("exitCode")
        if isinstance(code, int) and code:
            output = f"{output}\n(exit {code})"
        return [
            Turn(key, "user", f"!{as_str(message.get('command'))}", when, ran(as_str(message.get("command")))),
            Turn(f"{key}:output", "tool", summarise_tool_result(output), when),
        ]
    if role not in _NOT_SAID:
        count_unknown(unknown, role, "messages", "role")
    return []


def _text(content: object) -> str:
    """A message's text: a string, or its text parts (images as a short line; thinking left out)."""
    if isinstance(content, str):
        return content
    lines = []
    for part in as_list(content):
        part = as_dict(part)
        if part.get("type") == "text":
            lines.append(as_str(part.get("text")))
        elif part.get("type") == "image":
            lines.append("[image]")
    return "\n\n".join(line for line in lines if line.strip())


def _typed(text: str) -> str:
    """A prompt as the user typed it: a skill's expanded body back to `/skill:name`, a file given as
    `@file` to its name."""
    skill = _SKILL.match(text)
    if skill:
        text = f"/skill:{skill.group(1)} {skill.group(2) or ''}".strip()
    return _FILE.sub(lambda match: f"[file {match.group(1)}]\n", text).strip()
