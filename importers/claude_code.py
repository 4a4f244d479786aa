"""Claude Code transcripts: `<config dir>/projects/<mangled cwd>/<sessionId>.jsonl`, plus subagent
logs: `<sessionId>/subagents/agent-*.jsonl` (2.1) or `agent-*.jsonl` beside the sessions (2.0, each
record naming its parent `sessionId`). A path may be one file, a project folder, the `projects`
folder or the config dir itself (`~/.claude`).

One file is one conversation; the project is the session's working directory. Tool calls become
`[tool Bash: git status]`, tool results one shortened line, thinking is skipped. Streamed assistant
records that share one API message id are joined into one message.

A slash command is logged as markup (`<command-message>init is analyzing…</command-message>
<command-name>/init</command-name> <command-args>…</command-args>`); it is the user's `/init …`, as
Claude Code's transcript shows it. A local command's output (`<local-command-stdout>`) and bash
mode's (`<bash-stdout>`) are tool results; bash mode's input (`<bash-input>`) is the user's `! …`.
What Claude Code adds to a prompt for the model (the IDE extensions' `<ide_opened_file>` and
`<ide_selection>`, `<system-reminder>`, hook output) is not the user's: `build_conversation` leaves it out.
Nor is the marker Claude Code writes as a user message when the user stops it (`[Request interrupted
by user]`, `… for tool use]`).

Titles, as Claude Code's session list shows them: the user's `custom-title`, else the `ai-title`,
else a `summary` record naming one of the session's messages (`leafUuid`). Claude Code writes those
summaries into whichever session file was open when it titled older sessions, so the other session
files of the project folder are looked at too (their leading summary records only).

Claude Code 2.x also logs its prompt queue: a prompt typed while the agent is busy is written as
`{"type":"queue-operation","operation":"enqueue","content":...}`; `dequeue` means it was sent as the
next turn (a `user` record follows), `remove` that it was taken in mid-turn (newer versions add a
`queued_command` attachment carrying it), `popAll` that the user pulled the queue back to edit it.
Every prompt the user typed is imported once: at its enqueue, unless a later user record or
attachment carries the same words, or the user took it back. Queued task notifications are the
harness's own and are not the user.

Auto-compaction runs a helper agent whose log (`subagents/agent-acompact-*.jsonl`) replays the whole
session to summarise it; the summary lands in the session itself (`isCompactSummary`), so these logs
are not chats and are skipped, saying so. Bookkeeping record types are known and skipped; any other
type is counted in the report.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
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
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    result_text,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, one_read_per_folder, per_folder, read_head
from importers._touches import tool_use_touches
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation, Role

_SKIPPED_BLOCKS = {"thinking", "redacted_thinking"}
COMPACTION_PREFIX = "agent-acompact-"
# Record types Claude Code writes that hold no conversation text of their own (state, progress,
# titles handled above); other types are counted as unknown.
_BOOKKEEPING = {
    "system",
    "progress",
    "file-history-snapshot",
    "last-prompt",
    "agent-name",
    "agent-color",
    "tag",
    "mode",
    "permission-mode",
    "worktree-state",
    "relocated",
}
_NOTIFICATIONS = ("<task-notification>", "[SYSTEM NOTIFICATION")
# What Claude Code writes as the user's message when they stop a reply or a tool: a marker, not words.
_INTERRUPTS = {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
_COMMAND_PART = re.compile(r"<command-(name|message|args)>(.*?)</command-\1>", re.DOTALL)
_OUTPUT = re.compile(r"<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr)>(.*?)</\1>", re.DOTALL)
_BASH_INPUT = re.compile(r"^\s*<bash-input>(.*?)</bash-input>\s*$", re.DOTALL)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# How far into a sibling session file its summary records are looked for: Claude Code writes them
# first, before the session's own records.
_SUMMARY_HEAD = 65536


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where Claude Code keeps transcripts: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    return [env_folder(env, "CLAUDE_CONFIG_DIR", home, ".claude") / "projects"]


class ClaudeCodeImporter(AgentLogImporter):
    name = "claude-code"
    # `claude --resume` finds a session among its folder's transcripts: it runs in the session's folder.
    resume: ClassVar[tuple[str, ...]] = ("claude", "--resume", "{session}")
    variables: ClassVar[Mapping[str, str]] = {
        "CLAUDE_CONFIG_DIR": "Claude Code's config folder (default ~/.claude), whose projects/ holds the transcripts"
    }

    def session_id(self, conversation_id: str, url: str | None = None) -> str | None:
        """A transcript's name; a subagent's chat (`claude-code:<session>:<agent>`) continues in its session."""
        parts = conversation_id.split(":")
        return parts[1] if len(parts) > 1 and parts[1] else None

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home)

    def session_files(self, folder: Path) -> list[Path]:
        """Transcripts and subagent logs (`<session>/subagents/agent-*.jsonl`); auto-compaction helper
        logs are not sessions."""
        return sorted(f for f in _root(folder).rglob("*.jsonl") if not f.stem.startswith(COMPACTION_PREFIX))

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_transcript(path)
        return path.is_dir() and any_file(_root(path), 3, _looks_like_transcript)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Claude Code transcripts (*.jsonl) under {path}")
        helpers = 0 if path.is_file() else sum(1 for _ in _root(path).rglob(f"{COMPACTION_PREFIX}*.jsonl"))
        if helpers:
            report.note(
                f"left out {helpers} auto-compaction helper log(s) ({COMPACTION_PREFIX}*): "
                "their summaries are in the sessions they compacted"
            )
        unknown: UnknownCounts = {}
        with one_read_per_folder():
            yield from convert_each(path, files, report, lambda file: _convert(file, report, unknown), "transcript")
        note_unknown(report, unknown)


def _root(path: Path) -> Path:
    """The folder of project folders: the config dir's `projects`, or the path itself."""
    return path / "projects" if (path / "projects").is_dir() else path


def _looks_like_transcript(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    head = read_head(path, 8192)
    return '"sessionId"' in head and ('"parentUuid"' in head or '"leafUuid"' in head)


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    if file.stem.startswith(COMPACTION_PREFIX):
        raise Unusable("auto-compaction helper log; its summary is part of the session it compacted")
    # 2.1 keeps a subagent's log in `<session>/subagents/`; 2.0 beside the sessions as `agent-*.jsonl`.
    subagent = file.parent.name == "subagents" or file.stem.startswith("agent-")
    conversation_id = f"claude-code:{file.stem}"
    if file.parent.name == "subagents":
        conversation_id = f"claude-code:{file.parent.parent.name}:{file.stem}"
    transcript = _Transcript(conversation_id, subagent, unknown)
    for line, record in iter_jsonl(file, report):
        transcript.add(line, as_dict(record))
    turns = transcript.turns
    if transcript.sidechain:
        report.note(f"{file.name}: {transcript.sidechain} inline subagent record(s) left out of the main thread")
    if subagent and file.parent.name != "subagents":
        conversation_id = f"claude-code:{transcript.parent_session or file.parent.name}:{file.stem}"
    titles = transcript.titles
    title = titles["custom"] or titles["ai"] or _summary_title(file, transcript.uuids, transcript.summaries)
    if subagent:
        title = title or f"Subagent: {next((t.text for t in turns if t.role == 'user'), '')}"
    return build_conversation(
        id=conversation_id,
        source="claude-code",
        turns=turns,
        report=report,
        title=title,
        project=transcript.cwd or file.parent.name,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


class _Transcript:
    """What one transcript's records add up to, record by record: its turns, the prompts queued while
    the agent worked, the titles and summaries it names, its folder and the session it belongs to."""

    def __init__(self, conversation_id: str, subagent: bool, unknown: UnknownCounts) -> None:
        self.conversation_id = conversation_id
        self.subagent = subagent
        self.unknown = unknown
        self.turns: list[Turn] = []
        self.queue = _Queue()
        self.uuids: list[str] = []
        self.summaries: dict[str, str] = {}
        self.titles = {"custom": "", "ai": ""}
        self.cwd = self.last_api_id = self.parent_session = ""
        self.sidechain = 0

    def add(self, line: int, record: dict[str, Any]) -> None:
        kind = as_str(record.get("type"))
        when = parse_time(record.get("timestamp"))
        if kind == "summary":
            self.summaries[as_id(record.get("leafUuid"))] = as_str(record.get("summary"))
        elif kind in {"custom-title", "ai-title"}:
            key = kind.removesuffix("-title")
            self.titles[key] = as_str(record.get(f"{key}Title")) or self.titles[key]
        elif kind == "queue-operation":
            self.queue.operation(record, Turn(f"{self.conversation_id}:queued:{line}", "user", "", when), self.turns)
        elif kind == "attachment":
            prompt = _queued_prompt(as_dict(record.get("attachment")))
            if prompt:
                self.queue.delivered(prompt)
                self.turns.append(Turn(f"{self.conversation_id}:attachment:{line}", "user", prompt, when))
        elif kind not in {"user", "assistant"}:
            if kind not in _BOOKKEEPING:
                count_unknown(self.unknown, kind)
        elif record.get("isMeta") is True:
            return
        elif record.get("isSidechain") is True and not self.subagent:
            self.sidechain += 1  # older versions logged subagents inline; they are not the main thread
        else:
            self._message(kind, record, when)

    def _message(self, kind: str, record: dict[str, Any], when: datetime | None) -> None:
        uuid = as_id(record.get("uuid"))
        self.uuids.append(uuid)
        self.cwd = self.cwd or as_str(record.get("cwd"))
        self.parent_session = self.parent_session or as_id(record.get("sessionId"))
        message = as_dict(record.get("message"))
        turns = self.turns
        if kind == "assistant":
            text = _assistant_text(message.get("content"), self.unknown)
            touched = tool_use_touches(message.get("content"))
            api_id = as_id(message.get("id"))
            if api_id and api_id == self.last_api_id and turns and turns[-1].role == "assistant":
                turns[-1].text = "\n\n".join(part for part in (turns[-1].text, text) if part)
                turns[-1].touches += touched
            else:
                turns.append(Turn(uuid, "assistant", text, when, touched))
            self.last_api_id = api_id
            return
        self.last_api_id = ""
        role: Role = "system" if record.get("isCompactSummary") is True else "user"
        text, results = _user_parts(message.get("content"), self.unknown)
        if results:
            turns.append(Turn(f"{uuid}:result" if uuid else "", "tool", results, when))
        if role == "user":
            role, text = _as_typed(text)
        if role == "user" and text:
            self.queue.delivered(text)
        turns.append(Turn(uuid, role, text, when))


def _summary_title(file: Path, uuids: list[str], own: dict[str, str]) -> str:
    """The summary naming the latest of this session's messages, from this file or a sibling."""
    if not uuids:
        return ""
    folder = per_folder("claude-code summaries", file.parent, _folder_summaries)
    return next((own.get(uuid) or folder[uuid] for uuid in reversed(uuids) if uuid in own or uuid in folder), "")


def _folder_summaries(folder: Path) -> dict[str, str]:
    """leafUuid -> summary, from the leading summary records of every session file in `folder` (the
    first file by name that names a message wins)."""
    found: dict[str, str] = {}
    try:
        siblings = sorted(entry.path for entry in os.scandir(folder) if entry.name.endswith(".jsonl"))
    except OSError:
        return found
    for sibling in siblings:
        try:
            mark = os.stat(sibling)
        except OSError:
            continue
        for leaf, summary in _leading_summaries(sibling, mark.st_size, mark.st_mtime_ns):
            found.setdefault(leaf, summary)
    return found


# Sized for the largest project folders, so a sync's look through one is not read again the next time.
@functools.lru_cache(maxsize=65536)
def _leading_summaries(path: str, size: int, mtime_ns: int) -> tuple[tuple[str, str], ...]:
    """(leafUuid, summary) of the summary records at the start of a session file; cached by the
    file's size and time, so a folder of sessions is looked through once per change."""
    del size, mtime_ns  # part of the cache key only
    found: list[tuple[str, str]] = []
    for line in read_head(Path(path), _SUMMARY_HEAD).splitlines():
        if '"summary"' not in line:
            continue
        try:
            record = as_dict(json.loads(line))
        except ValueError:
            continue  # the line the head cut off
        if record.get("type") == "summary" and as_str(record.get("summary")).strip():
            found.append((as_id(record.get("leafUuid")), as_str(record.get("summary"))))
    return tuple(found)


def _as_typed(text: str) -> tuple[Role, str]:
    """What a user record's text is, as Claude Code's transcript shows it: a slash command as the
    user's `/name args`, bash mode's input as `! command`, a command's output as a tool result."""
    if "<command-name>" in text or "<command-message>" in text:
        parts = {name: value.strip() for name, value in _COMMAND_PART.findall(text)}
        name = parts.get("name") or parts.get("message", "")
        if name and not name.startswith("/"):
            name = f"/{name}"
        return "user", " ".join(part for part in (name, parts.get("args", "")) if part)
    if bash := _BASH_INPUT.match(text):
        return "user", f"! {bash.group(1).strip()}"
    outputs = _OUTPUT.findall(text)
    if outputs and not _OUTPUT.sub("", text).strip():
        output = _ANSI.sub("", "\n".join(value for _, value in outputs)).strip()
        error = any(kind.endswith("stderr") for kind, value in outputs if value.strip())
        return "tool", summarise_tool_result(output, error=error) if output else ""
    return "user", text


class _Queue:
    """Prompts typed while the agent was busy, placed where they were typed until a later record
    shows them again (then that record is the message) or the user takes them back."""

    def __init__(self) -> None:
        self.waiting: list[Turn] = []  # still in the queue: the user can take these back
        self.sent: list[Turn] = []  # left the queue: a record carrying them may follow

    def operation(self, record: dict[str, Any], turn: Turn, turns: list[Turn]) -> None:
        operation = as_str(record.get("operation"))
        content = _plain_text(record.get("content")).strip()
        if operation == "enqueue":
            turn.text = content
            if content and not _is_notification(content):
                turns.append(turn)
                self.waiting.append(turn)
        elif operation in {"dequeue", "remove"} and self.waiting:
            # dequeue takes the oldest (a user record follows); remove names what was taken in mid-turn
            taken = (
                next((t for t in self.waiting if t.text == content), self.waiting[0]) if content else self.waiting[0]
            )
            self.waiting.remove(taken)
            self.sent.append(taken)
        elif operation == "popAll":  # pulled back into the prompt box; if resent, it is logged again
            for waiting in self.waiting:
                waiting.text = ""
            self.waiting.clear()

    def delivered(self, text: str) -> None:
        """A record carrying these words: the queued copy of them is not needed."""
        for queued in (*self.sent, *self.waiting):
            if queued.text and queued.text in text:
                queued.text = ""
                (self.sent if queued in self.sent else self.waiting).remove(queued)
                return


def _queued_prompt(attachment: dict[str, Any]) -> str:
    """A prompt the user queued, as the attachment that delivered it mid-turn carries it; "" for
    other attachments and for what the harness itself queued (task notifications, SDK input)."""
    if as_str(attachment.get("type")) != "queued_command":
        return ""
    origin = attachment.get("origin")
    if isinstance(origin, dict) and as_str(origin.get("kind")) not in {"", "human"}:
        return ""
    text = _plain_text(attachment.get("prompt"))
    return "" if _is_notification(text) else text


def _plain_text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = [as_dict(block) for block in as_list(content)]
    return "\n\n".join(as_str(p.get("text")) if p.get("type") == "text" else f"[{p.get('type')}]" for p in parts)


def _is_notification(text: str) -> bool:
    return text.lstrip().startswith(_NOTIFICATIONS)


def _assistant_text(content: object, unknown: UnknownCounts) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            parts.append(as_str(block.get("text")))
        elif kind in {"tool_use", "server_tool_use"}:
            parts.append(summarise_tool_call(as_str(block.get("name")), block.get("input")))
        elif kind not in _SKIPPED_BLOCKS:
            count_unknown(unknown, kind, "content blocks")
    return "\n\n".join(part for part in parts if part.strip())


def _user_parts(content: object, unknown: UnknownCounts) -> tuple[str, str]:
    """(what the user wrote, the tool results this record carries back)."""
    if isinstance(content, str):
        return ("" if content.strip() in _INTERRUPTS else content), ""
    texts: list[str] = []
    results: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            text = as_str(block.get("text"))
            texts.append("" if text.strip() in _INTERRUPTS else text)
        elif kind == "tool_result":
            error = block.get("is_error") is True
            results.append(summarise_tool_result(result_text(block.get("content")), error=error))
        elif kind in {"image", "document"}:
            texts.append(f"[{kind}]")
        else:
            count_unknown(unknown, kind, "content blocks")
    return "\n\n".join(t for t in texts if t.strip()), "\n".join(results)
