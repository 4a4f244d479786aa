"""Cursor's agent transcripts, which its CLI agent (`cursor-agent`) and the editor's agent write outside
the editor's databases: `~/.cursor/projects/<project>/agent-transcripts/` on every platform, one
transcript per chat. Cursor publishes no schema; the shapes below are the files as Cursor 2025-2026
writes them (documented by Cursor's forum and by tools that read them), and each is read as written:

- `<chat id>/<chat id>.jsonl` (current), subagents in `<chat id>/subagents/<id>.jsonl`, and flat
  `<chat id>.jsonl` (earlier): one message a line, `{"role": "user"|"assistant", "message": {"content":
  text or [{"type": "text"|"tool_use"|"tool_result", ...}]}}`; other lines (turn markers) carry no text;
- `<chat id>.txt` (the first transcripts): `user:` and `assistant:` lines open each message; inside a
  reply, `[Thinking]`, `[Tool call] name` and `[Tool result] name` open indented blocks.

What the user typed is inside `<user_query>`; the context Cursor adds around it (`<user_info>`,
attached files, rules) is not theirs and is left out, as is the model's thinking. Transcripts carry
no times: a chat's time is its file's. The project is the `Workspace Path` Cursor tells the model
in `<user_info>`, else the folder Cursor named the project folder after (`home-ana-src-vite` for
`/home/ana/src/vite`), found on this machine when it still exists.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from importers._common import (
    Turn,
    UnknownCounts,
    as_dict,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    note_unknown,
    result_text,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, iter_jsonl, open_regular, read_head
from importers._touches import VERBS, tool_use_touches
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation, Role, Touch

TRANSCRIPTS = "agent-transcripts"
_USER_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)
_CONTEXT_BLOCK = re.compile(r"^\s*<([a-z_]+)>.*?</\1>\s*", re.DOTALL)
_TEXT_MARKERS = ("[Thinking]", "[Tool call] ", "[Tool result]")
_NOT_WORD = re.compile(r"[\W_]+")
_WORKSPACE = re.compile(r"<user_info>.*?^\s*Workspace Path:\s*(\S[^\n]*?)\s*$.*?</user_info>", re.DOTALL | re.MULTILINE)


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".cursor" / "projects"]


class CursorAgentImporter(AgentLogImporter):
    name = "cursor-agent"

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home)

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(_transcripts(folder))

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_transcript(path)
        return path.is_dir() and any(_looks_like_transcript(file) for file in _transcripts(path)[:20])

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Cursor agent transcripts ({TRANSCRIPTS}/*.jsonl, *.txt) under {path}")
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: _convert(file, report, unknown), "transcript")
        note_unknown(report, unknown)


def _transcripts(folder: Path) -> list[Path]:
    """Transcripts at `folder`: `~/.cursor`, its `projects`, a project's folder or its transcripts."""
    if (folder / "projects").is_dir():
        folder = folder / "projects"
    if folder.name == TRANSCRIPTS:
        places = [folder]
    elif (folder / TRANSCRIPTS).is_dir():
        places = [folder / TRANSCRIPTS]
    else:
        places = sorted(folder.glob(f"*/{TRANSCRIPTS}"))
    found: list[Path] = []
    for place in places:
        found += [f for f in place.glob("*") if f.suffix in {".jsonl", ".txt"} and f.is_file()]
        found += [f for f in place.glob("*/*.jsonl") if f.stem == f.parent.name]
        found += list(place.glob("*/subagents/*.jsonl"))
    return found


def _looks_like_transcript(path: Path) -> bool:
    if path.suffix not in {".jsonl", ".txt"} or TRANSCRIPTS not in path.parts:
        return False
    head = read_head(path, 4096).lstrip()
    if path.suffix == ".txt":
        return head.startswith(("user:", "assistant:"))
    return head.startswith("{") and '"role"' in head and '"message"' in head


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    original = report.original(file)
    chat = original.parent.parent.name if original.parent.name == "subagents" else original.stem
    conversation_id = f"cursor-agent:{chat}"
    if original.parent.name == "subagents":
        conversation_id += f":{original.stem}"
    workspace: list[str] = []
    turns = _text_turns(file, workspace) if file.suffix == ".txt" else _jsonl_turns(file, report, unknown, workspace)
    title = ""
    if original.parent.name == "subagents":
        title = f"Subagent: {next((t.text for t in turns if t.role == 'user'), '')}"
    return build_conversation(
        id=conversation_id,
        source="cursor-agent",
        turns=turns,
        report=report,
        title=title,
        project=next(iter(workspace), None) or _project(file, original),
        url=original.as_uri(),
        fallback_time=file_time(file),
    )


def _jsonl_turns(file: Path, report: ImportReport, unknown: UnknownCounts, workspace: list[str]) -> list[Turn]:
    turns: list[Turn] = []
    for line, record in iter_jsonl(file, report):
        record = as_dict(record)
        role = as_str(record.get("role"))
        content = as_dict(record.get("message")).get("content")
        if role == "user":
            said, results = _user_parts(content)
            if results:
                turns.append(Turn(f"{line}:result", "tool", results))
            turns.append(Turn(str(line), "user", _typed(said, workspace)))
        elif role == "assistant":
            turns.append(Turn(str(line), "assistant", _assistant_text(content, unknown), touches=_touched(content)))
        elif role or "message" in record:
            count_unknown(unknown, role, "lines", "role")
    return turns


# Cursor's own names for its file and terminal tools, beside the ones agents share.
_VERBS: Mapping[str, Action] = {
    **VERBS,
    "strreplace": "edited",
    "delete": "edited",
    "shell": "ran",
}


def _touched(content: object) -> tuple[Touch, ...]:
    return tool_use_touches(content, _VERBS)


def _user_parts(content: object) -> tuple[str, str]:
    if isinstance(content, str):
        return content, ""
    texts, results = [], []
    for block in as_list(content):
        block = as_dict(block)
        if block.get("type") == "tool_result":
            results.append(
                summarise_tool_result(result_text(block.get("content")), error=block.get("is_error") is True)
            )
        elif block.get("type") == "text":
            texts.append(as_str(block.get("text")))
    return "\n".join(texts), "\n".join(results)


def _assistant_text(content: object, unknown: UnknownCounts) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in as_list(content):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            parts.append(as_str(block.get("text")))
        elif kind == "tool_use":
            parts.append(summarise_tool_call(as_str(block.get("name")), block.get("input")))
        elif kind not in {"thinking", "redacted_thinking", "reasoning"}:
            count_unknown(unknown, kind, "content blocks")
    return "\n\n".join(part for part in parts if part.strip())


def _typed(text: str, workspace: list[str]) -> str:
    """What the user typed: their query, without the context Cursor puts around it (noting the
    workspace that context names)."""
    if not workspace and (named := _WORKSPACE.search(text)):
        workspace.append(named.group(1))
    queries = _USER_QUERY.findall(text)
    if queries:
        return "\n\n".join(queries)
    while match := _CONTEXT_BLOCK.match(text):
        text = text[match.end() :]
    return text.strip()


def _text_turns(file: Path, workspace: list[str]) -> list[Turn]:
    """The first transcripts: `user:` / `assistant:` lines open messages; in a reply, marker lines open
    indented blocks (the thinking is skipped, a tool call is one line, its result a tool message)."""
    with open_regular(file) as handle:
        lines = handle.read().decode("utf-8", "replace").splitlines()
    turns: list[Turn] = []
    role: Role | None = None
    block: list[str] = []
    marker: tuple[str, list[str]] | None = None

    def close_marker() -> None:
        nonlocal marker
        if marker is None or role is None:
            return
        kind, body = marker
        body_text = "\n".join(line.strip() for line in body).strip()
        if kind.startswith("[Tool call] "):
            block.append(summarise_tool_call(kind.removeprefix("[Tool call] ").strip(), _first_argument(body_text)))
        elif kind.startswith("[Tool result]"):
            flush()
            turns.append(Turn("", "tool", summarise_tool_result(body_text)))
        marker = None

    def flush() -> None:
        if role is not None:
            text = "\n".join(block).strip()
            turns.append(Turn("", role, _typed(text, workspace) if role == "user" else text))
        block.clear()

    for line in lines:
        stripped = line.strip()
        if stripped in {"user:", "assistant:"}:
            close_marker()
            flush()
            role = "user" if stripped == "user:" else "assistant"
        elif role == "assistant" and stripped.startswith(_TEXT_MARKERS):
            close_marker()
            marker = (stripped, [])
        elif marker is not None and (not stripped or line[:1] in {" ", "\t"}):
            marker[1].append(line)
        else:
            close_marker()
            block.append(line)
    close_marker()
    flush()
    return [turn for turn in turns if turn.text.strip()]


def _first_argument(body: str) -> dict[str, Any] | str:
    """A tool call's arguments as the text transcript lists them (`name: value` lines)."""
    arguments: dict[str, Any] = {}
    for line in body.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().isidentifier():
            arguments[key.strip()] = value.strip()
    return arguments or body


def _project(file: Path, original: Path) -> str | None:
    """For a transcript whose context names no workspace: the one another transcript of the same
    project names, else the folder Cursor named the project's folder after (`/` and `.` made `-`)."""
    transcripts = next((p for p in file.parents if p.name == TRANSCRIPTS), None)
    folder = next((p.parent for p in original.parents if p.name == TRANSCRIPTS), None)
    if transcripts is None or folder is None:
        return None
    for other in sorted(_transcripts(transcripts))[:50]:
        if named := _WORKSPACE.search(_head_text(other)):
            return named.group(1)
    return _resolve(folder.name) or folder.name


def _head_text(transcript: Path) -> str:
    """The text of a transcript's first lines (its first message carries Cursor's context)."""
    head = read_head(transcript, 16384)
    if transcript.suffix == ".txt":
        return head
    texts = []
    for line in head.splitlines()[:3]:
        try:
            content = as_dict(as_dict(json.loads(line)).get("message")).get("content")
        except ValueError:
            continue
        texts.append(_user_parts(content)[0])
    return "\n".join(texts)


def _resolve(slug: str) -> str | None:
    """The one existing folder whose path, with separators and dots as dashes, is `slug`."""
    parts = _words(slug)
    if sys.platform.startswith("win") and len(parts[0]) == 1:
        roots = [(Path(f"{parts[0]}:\\"), parts[1:])]
    else:
        roots = [(Path("/"), parts)]
    found: list[Path] = []
    for root, rest in roots:
        _walk(root, rest, found)
        if len(found) > 1:
            return None
    return str(found[0]) if len(found) == 1 else None


def _words(name: str) -> list[str]:
    """A name cut where Cursor's folder names put a dash (separators, dots; any other sign too)."""
    return [word for word in _NOT_WORD.split(name) if word]


def _walk(folder: Path, rest: list[str], found: list[Path], depth: int = 0) -> None:
    if not rest:
        found.append(folder)
        return
    if depth > 24 or len(found) > 1:
        return
    try:
        children = [child for child in folder.iterdir() if child.is_dir()]
    except OSError:
        return
    for child in children:
        words = _words(child.name)
        if words == rest[: len(words)]:
            _walk(child, rest[len(words) :], found, depth + 1)
