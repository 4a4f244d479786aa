"""Kimi CLI sessions: `<share dir>/sessions/<md5 of the folder>/<session id>/`, the share dir being
`$KIMI_SHARE_DIR`, else `~/.kimi` (on every OS). `<share dir>/kimi.json` lists the folders Kimi CLI
ran in (`work_dirs[].path`), which the md5 is taken of; `state.json` beside a session holds the
title a user gave it (`custom_title`).

Each session keeps two logs. `wire.jsonl` (since December 2025) is every event of the session, one
`{"timestamp": <Unix seconds>, "message": {"type", "payload"}}` a line after a
`{"type": "metadata", "protocol_version"}` header: `TurnBegin` and `SteerInput` carry what the user
typed (`user_input`), `ContentPart` the reply as it streamed (text, and thinking, which is left out),
`ToolCall` and `ToolCallPart` a tool call and its arguments, `ToolResult` its output; a subagent's
events arrive wrapped in `SubagentEvent` and are its own work, not the chat. It is the one read
when there. `context.jsonl` (`<session id>.jsonl` beside the folder before late November 2025) is
what the model is sent, `{role, content}` a line, without times and cut back when the context is
compacted: read only for sessions that have no wire log. The text Kimi CLI adds to it itself
(`<system>` and `<system-reminder>` parts, the `_system_prompt`, `_checkpoint` and `_usage` lines)
is left out, and a file attached to a prompt (`<document path=…>` its content `</document>`, and
`image`, `video` alike) becomes one line naming it.

**Kimi Code** (`kimi-code`, the standalone successor): `<data dir>/sessions/<wd_<folder>_<hash>>/
session_<id>/`, the data dir being `$KIMI_CODE_HOME`, else `~/.kimi-code` (on every OS);
`<data dir>/session_index.jsonl` names each session's folder (`{sessionId, sessionDir, workDir}`).
`state.json` holds the title, folder (`cwd`) and times (Unix milliseconds); `agents/main/wire.jsonl`
the main agent's records, `{type, ...payload, time}` after a `metadata` line: `turn.prompt` and
`turn.steer` carry an `input` and its `origin` (`{kind}`; only `user` is what someone typed: skill
activations, injections, hook results, cron jobs and retries are not), `context.append_loop_event` the reply
(`content.part` text; thinking left out), `tool.call` and `tool.result`. Subagents
(`agents/<other>/`) are their own work.
A session Kimi Code imported from Kimi CLI (`custom.imported_from_kimi_cli`) is left to `kimi-cli`,
which reads it where Kimi CLI wrote it (the import leaves that in place).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from importers._common import (
    Turn,
    UnknownCounts,
    as_dict,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, open_regular, read_head, read_regular
from importers._sessions import SessionFileImporter
from importers._touches import function_call_touches
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation

WIRE = "wire.jsonl"
CONTEXT = "context.jsonl"
# Events that are the session's bookkeeping: steps, status, approvals, hooks, MCP, compaction.
_SILENT_EVENTS = {
    "StepInterrupted", "StepRetry", "StatusUpdate", "CompactionBegin", "CompactionEnd", "HookTriggered",
    "HookResolved", "MCPLoadingBegin", "MCPLoadingEnd", "Notification", "PlanDisplay", "BtwBegin", "BtwEnd",
    "SubagentEvent", "ApprovalRequest", "ApprovalResponse", "ApprovalRequestResolved", "QuestionRequest",
    "QuestionResponse", "ToolCallRequest", "HookRequest", "HookResponse",
}  # fmt: skip
_INJECTED = ("<system>", "<system-reminder>")
_MD5 = re.compile(r"(?:^|_)[0-9a-f]{32}$")
# A file attached to a prompt is wrapped in a tag naming it: `<document path="…" content_type="…">`,
# its content, `</document>` (also `image`, `video`, `audio`). The file's content is not what was typed.
_MEDIA_OPEN = re.compile(r'\A<(image|video|audio|document)((?:\s+[a-z_]+="[^"]*")*)>\Z')
_PATH = re.compile(r'\bpath="([^"]*)"')


def share_folder(env: Mapping[str, str], home: Path) -> Path:
    return env_folder(env, "KIMI_SHARE_DIR", home, ".kimi")


class KimiImporter(SessionFileImporter):
    name = "kimi-cli"
    resume: ClassVar[tuple[str, ...]] = ("kimi", "--session", "{session}")  # a session folder's name
    none_found = "no Kimi CLI sessions (sessions/<folder hash>/<session>/wire.jsonl) under {path}"
    variables: ClassVar[Mapping[str, str]] = {
        "KIMI_SHARE_DIR": "Kimi CLI's folder (default ~/.kimi), whose sessions/ holds the sessions"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [share_folder(env, home) / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        found = [*root.glob(f"*/*/{WIRE}"), *root.glob(f"*/*/{CONTEXT}"), *root.glob("*/*.jsonl")]
        return sorted(file for file in found if file.is_file() and _is_session_log(file))

    def context_files(self, session: Path) -> list[Path]:
        """The title's `state.json` (`metadata.json` before) and the folder list `kimi.json`, kept with
        the session's copy."""
        folder = _session_folder(session)
        found = [folder / "state.json", folder / "metadata.json", folder.parent.parent.parent / "kimi.json"]
        return [file for file in found if file.is_file()]

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_wire(path) or (path.name == CONTEXT and _looks_like_context(path))
        return path.is_dir() and any_file(path, 3, lambda file: _looks_like_wire(file) or _looks_like_context(file))

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _looks_like_wire(path: Path) -> bool:
    """Kimi CLI's wire log: `<md5 of the folder>/<session>/wire.jsonl` (Kimi Code's lie under `agents/`)."""
    if path.name != WIRE or not _MD5.search(path.parent.parent.name):
        return False
    first = read_head(path, 4096).split("\n", 1)[0].replace(" ", "")
    return '"type":"metadata"' in first or ('"timestamp"' in first and '"payload"' in first)


def _looks_like_context(path: Path) -> bool:
    """A model context log: its first line a `_system_prompt`, `_checkpoint` or a message with a role."""
    if path.suffix != ".jsonl" or path.name == WIRE or not _MD5.search(_session_folder(path).parent.name):
        return False
    first = read_head(path, 4096).split("\n", 1)[0].replace(" ", "")
    return first.startswith(('{"role":"_system_prompt"', '{"role":"_checkpoint"', '{"role":"user"'))


def _is_session_log(file: Path) -> bool:
    """The log to read for a session: its wire log, else its context (in the folder or, before the
    folders, beside them)."""
    if file.name == WIRE:
        return True
    if file.name == CONTEXT:
        return not (file.parent / WIRE).is_file()
    return not (file.with_suffix("") / WIRE).is_file() and not (file.with_suffix("") / CONTEXT).is_file()


def _session_folder(file: Path) -> Path:
    """The session's own folder (its id): the log's folder, or the old context file's name."""
    return file.parent if file.name in {WIRE, CONTEXT} else file.with_suffix("")


def _project(session_folder: Path) -> str | None:
    """The folder whose md5 names the session's parent, from `kimi.json`."""
    registry = session_folder.parent.parent.parent / "kimi.json"
    try:
        listed = as_list(as_dict(json.loads(read_regular(registry).decode("utf-8", "replace"))).get("work_dirs"))
    except (OSError, ValueError, RecursionError):
        return None
    digest = session_folder.parent.name.rsplit("_", 1)[-1]  # `<kaos>_<md5>` away from the local machine
    for entry in listed:
        path = as_str(as_dict(entry).get("path"))
        if path and hashlib.md5(path.encode("utf-8")).hexdigest() == digest:
            return path
    return None


def _title(session_folder: Path) -> str:
    for name, key in (("state.json", "custom_title"), ("metadata.json", "title")):
        try:
            value = as_dict(json.loads(read_regular(session_folder / name).decode("utf-8", "replace"))).get(key)
        except (OSError, ValueError, RecursionError):
            continue
        if as_str(value).strip():
            return as_str(value)
    return ""


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    folder = _session_folder(file)
    turns = _wire_turns(file, report, unknown) if file.name == WIRE else _context_turns(file, report, unknown)
    return build_conversation(
        id=f"kimi-cli:{folder.name}",
        source="kimi-cli",
        turns=turns,
        report=report,
        title=_title(folder),
        project=_project(folder),
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


class _Reply:
    """The assistant's message of one step, as its parts stream in."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.when: Any = None

    def flush(self, turns: list[Turn], number: int) -> None:
        lines = ["".join(self.text).strip()]
        for call in self.calls:
            function = as_dict(call.get("function"))
            lines.append(summarise_tool_call(as_str(function.get("name")), as_str(function.get("arguments"))))
        text = "\n\n".join(line for line in lines if line)
        if text:
            turns.append(Turn(f"{number}:assistant", "assistant", text, self.when, function_call_touches(self.calls)))
        self.text, self.calls, self.when = [], [], None


def _wire_turns(file: Path, report: ImportReport, unknown: UnknownCounts) -> list[Turn]:
    turns: list[Turn] = []
    reply = _Reply()
    for number, record in iter_jsonl(file, report):
        record = as_dict(record)
        message = as_dict(record.get("message"))
        kind, payload, when = as_str(message.get("type")), as_dict(message.get("payload")), record.get("timestamp")
        if not kind:
            continue  # the metadata header
        moment = parse_time(when)
        if kind in {"TurnBegin", "SteerInput"}:
            reply.flush(turns, number)
            turns.append(Turn(f"{number}:user", "user", _text(payload.get("user_input")), moment))
        elif kind == "ContentPart":
            if payload.get("type") == "text":
                reply.when = reply.when or moment
                reply.text.append(as_str(payload.get("text")))
        elif kind == "ToolCall":
            reply.when = reply.when or moment
            reply.calls.append({**payload, "function": dict(as_dict(payload.get("function")))})
        elif kind == "ToolCallPart":
            if reply.calls:
                function = reply.calls[-1]["function"]
                function["arguments"] = as_str(function.get("arguments")) + as_str(payload.get("arguments_part"))
        elif kind == "ToolResult":
            reply.flush(turns, number)
            result = as_dict(payload.get("return_value"))
            text = _text(result.get("output")) or as_str(result.get("message"))
            summary = summarise_tool_result(text, error=bool(result.get("is_error")))
            turns.append(Turn(f"{number}:tool", "tool", summary, moment))
        elif kind in {"StepBegin", "TurnEnd"}:
            reply.flush(turns, number)
        elif kind not in _SILENT_EVENTS:
            count_unknown(unknown, kind, "events")
    reply.flush(turns, 1 << 40)
    return turns


def _context_turns(file: Path, report: ImportReport, unknown: UnknownCounts) -> list[Turn]:
    turns: list[Turn] = []
    for number, record in iter_jsonl(file, report):
        record = as_dict(record)
        role = as_str(record.get("role"))
        if role == "user":
            turns.append(Turn(f"{number}", "user", _text(record.get("content")), None))
        elif role == "assistant":
            calls = [as_dict(call) for call in as_list(record.get("tool_calls"))]
            lines = [_text(record.get("content"))]
            for call in calls:
                function = as_dict(call.get("function"))
                lines.append(summarise_tool_call(as_str(function.get("name")), as_str(function.get("arguments"))))
            text = "\n\n".join(line for line in lines if line.strip())
            turns.append(Turn(f"{number}", "assistant", text, None, function_call_touches(calls)))
        elif role == "tool":
            turns.append(Turn(f"{number}", "tool", summarise_tool_result(_text(record.get("content"))), None))
        elif not role.startswith("_") and role != "system":
            count_unknown(unknown, role, "messages", "role")
    return turns


def _text(content: object) -> str:
    """A message's text: a string, or its text parts; thinking and the parts Kimi CLI adds left out,
    an attached file as one line naming it."""
    if isinstance(content, str):
        return "" if content.lstrip().startswith(_INJECTED) else content
    texts = []
    inside = ""
    for part in as_list(content):
        part = as_dict(part)
        kind = as_str(part.get("type"))
        text = as_str(part.get("text")).strip() if kind == "text" else ""
        if inside:
            inside = "" if text == f"</{inside}>" else inside
            continue
        opened = _MEDIA_OPEN.match(text)
        if opened:
            inside = opened.group(1)
            path = _PATH.search(opened.group(2))
            label = "file" if inside == "document" else inside
            texts.append(f"[{label} {html.unescape(path.group(1))}]" if path else f"[{label}]")
        elif kind == "text" and not as_str(part.get("text")).lstrip().startswith(_INJECTED):
            texts.append(as_str(part.get("text")))
        elif kind in {"image_url", "audio_url", "video_url"}:
            texts.append(f"[{kind.removesuffix('_url')}]")
    return "\n\n".join(text for text in texts if text.strip())


# --- Kimi Code ----------------------------------------------------------------------------------

MAIN_WIRE = ("agents", "main", WIRE)
_TYPED_ORIGINS = {"user", "shell_command"}  # what someone typed; every other origin is Kimi Code's own


def kimi_code_folder(env: Mapping[str, str], home: Path) -> Path:
    return env_folder(env, "KIMI_CODE_HOME", home, ".kimi-code")


class KimiCodeImporter(AgentLogImporter):
    name = "kimi-code"
    variables: ClassVar[Mapping[str, str]] = {
        "KIMI_CODE_HOME": "Kimi Code's folder (default ~/.kimi-code), whose sessions/ holds the sessions"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [kimi_code_folder(env, home) / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        found = [*root.glob("*/session_*/agents/main/wire.jsonl"), *root.glob("session_*/agents/main/wire.jsonl")]
        found += list(root.glob("agents/main/wire.jsonl"))
        return sorted(file for file in found if file.is_file())

    def context_files(self, session: Path) -> list[Path]:
        """The session's `state.json` (title, times) and the data dir's `session_index.jsonl` (folder)."""
        if len(session.parents) < 6:
            return []
        found = [session.parents[2] / "state.json", session.parents[5] / "session_index.jsonl"]
        return [file for file in found if file.is_file()]

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_code_wire(path)
        return path.is_dir() and any(_looks_like_code_wire(file) for file in self.session_files(path)[:20])

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Kimi Code sessions (sessions/*/session_*/agents/main/wire.jsonl) under {path}")
        unknown: UnknownCounts = {}
        imported = [f for f in files if as_dict(_state(f).get("custom")).get("imported_from_kimi_cli") is True]
        if imported:
            report.note(f"{len(imported)} session(s) Kimi Code imported from Kimi CLI are read from Kimi CLI's files")
        files = [f for f in files if f not in imported]
        yield from convert_each(path, files, report, lambda file: _convert_code(file, report, unknown), "session")
        note_unknown(report, unknown)


def _looks_like_code_wire(path: Path) -> bool:
    if path.name != WIRE or path.parent.parent.name != "agents":
        return False
    first = read_head(path, 4096).split("\n", 1)[0].replace(" ", "")
    return '"type":"metadata"' in first and '"created_at"' in first


def _state(wire: Path) -> dict[str, Any]:
    if len(wire.parents) < 3:
        return {}
    try:
        return as_dict(json.loads(read_regular(wire.parents[2] / "state.json").decode("utf-8", "replace")))
    except (OSError, ValueError, RecursionError):
        return {}


def _work_dir(session: Path) -> str | None:
    """The folder `session_index.jsonl` gives the session (its last entry for it)."""
    index = session.parent.parent.parent / "session_index.jsonl"
    found = None
    try:
        with open_regular(index) as handle:
            for raw in handle:
                try:
                    entry = as_dict(json.loads(raw.decode("utf-8", "replace")))
                except (ValueError, RecursionError):
                    continue
                if as_str(entry.get("sessionId")) == session.name and as_str(entry.get("workDir")):
                    found = as_str(entry.get("workDir"))
    except OSError:
        return None
    return found


def _convert_code(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    session = file.parents[2] if len(file.parents) >= 3 else file.parent
    state = _state(file)
    turns: list[Turn] = []
    reply = _Reply()
    cwd = ""
    for number, record in iter_jsonl(file, report):
        record = as_dict(record)
        kind, moment = as_str(record.get("type")), parse_time(record.get("time"))
        if kind in {"turn.prompt", "turn.steer"}:
            reply.flush(turns, number)
            origin = record.get("origin")
            if (as_str(as_dict(origin).get("kind")) or as_str(origin)) in _TYPED_ORIGINS or origin is None:
                turns.append(Turn(f"{number}:user", "user", _text(record.get("input")), moment))
        elif kind == "context.append_loop_event":
            event = as_dict(record.get("event"))
            step = as_str(event.get("type"))
            if step == "content.part":
                part = as_dict(event.get("part"))
                if part.get("type") == "text":
                    reply.when = reply.when or moment
                    reply.text.append(as_str(part.get("text")))
            elif step == "tool.call":
                reply.when = reply.when or moment
                arguments = event.get("args")
                reply.calls.append({"function": {"name": event.get("name"), "arguments": json.dumps(arguments)}})
            elif step == "tool.result":
                reply.flush(turns, number)
                result = as_dict(event.get("result"))
                summary = summarise_tool_result(_text(result.get("output")), error=bool(result.get("isError")))
                turns.append(Turn(f"{number}:tool", "tool", summary, moment))
            elif step in {"step.begin", "step.end"}:
                reply.flush(turns, number)
            else:
                count_unknown(unknown, step, "loop events")
        elif kind == "turn.ended":
            reply.flush(turns, number)
        elif kind == "config.update":
            disclosure = as_dict(record.get("environmentDisclosure"))
            cwd = as_str(disclosure.get("cwd")) or as_str(record.get("cwd")) or cwd
    reply.flush(turns, 1 << 40)
    return build_conversation(
        id=f"kimi-code:{session.name}",
        source="kimi-code",
        turns=turns,
        report=report,
        title=as_str(state.get("title")),
        created_at=parse_time(state.get("createdAt")),
        updated_at=parse_time(state.get("updatedAt")),
        project=as_str(state.get("cwd")) or _work_dir(session) or cwd or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )
