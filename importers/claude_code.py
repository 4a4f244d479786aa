"""Claude Code transcripts: `<config dir>/projects/<mangled cwd>/<sessionId>.jsonl`, plus subagent
logs in `<sessionId>/subagents/agent-*.jsonl`. A path may be one file, a project folder, the
`projects` folder or the config dir itself (`~/.claude`).

One file is one conversation; the project is the session's working directory. Tool calls become
`[tool Bash: git status]`, tool results one shortened line, thinking is skipped. Streamed assistant
records that share one API message id are joined into one message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from importers._common import (
    Turn,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    expand_home,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, read_head
from importers.base import ImportReport, SourceError
from storage.models import Conversation, Role

_SKIPPED_BLOCKS = {"thinking", "redacted_thinking"}


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where Claude Code keeps transcripts: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return [(expand_home(configured, home) if configured else home / ".claude") / "projects"]


def looks_like_transcript(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    head = read_head(path, 8192)
    return '"sessionId"' in head and ('"parentUuid"' in head or '"leafUuid"' in head)


class ClaudeCodeImporter:
    name = "claude-code"
    description = "Claude Code session transcripts (~/.claude/projects, a project folder or one .jsonl)"

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return looks_like_transcript(path)
        return path.is_dir() and any_file(_root(path), 3, looks_like_transcript)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else sorted(_root(path).rglob("*.jsonl"))
        if not files:
            raise SourceError(f"no Claude Code transcripts (*.jsonl) under {path}")
        unknown: dict[str, int] = {}
        yield from convert_each(path, files, report, lambda file: _convert(file, report, unknown), "transcript")
        note_unknown(report, unknown, "Claude Code content")


def _root(path: Path) -> Path:
    return path / "projects" if (path / "projects").is_dir() else path


def _convert(file: Path, report: ImportReport, unknown: dict[str, int]) -> Conversation:
    subagent = file.parent.name == "subagents"
    turns: list[Turn] = []
    uuids: set[str] = set()
    summaries: dict[str, str] = {}
    custom_title = cwd = session = last_api_id = ""
    sidechain = 0
    for _, record in iter_jsonl(file, report):
        record = as_dict(record)
        kind = as_str(record.get("type"))
        if kind == "summary":
            summaries[as_id(record.get("leafUuid"))] = as_str(record.get("summary"))
            continue
        if kind == "custom-title":
            custom_title = as_str(record.get("customTitle")) or custom_title
            continue
        if kind not in {"user", "assistant"} or record.get("isMeta") is True:
            continue
        if record.get("isSidechain") is True and not subagent:
            sidechain += 1  # older versions logged subagents inline; they are not the main thread
            continue
        uuid = as_id(record.get("uuid"))
        uuids.add(uuid)
        cwd = cwd or as_str(record.get("cwd"))
        session = session or as_id(record.get("sessionId"))
        message = as_dict(record.get("message"))
        when = parse_time(record.get("timestamp"))
        if kind == "assistant":
            text = _assistant_text(message.get("content"), unknown)
            api_id = as_id(message.get("id"))
            if api_id and api_id == last_api_id and turns and turns[-1].role == "assistant":
                turns[-1].text = "\n\n".join(part for part in (turns[-1].text, text) if part)
            else:
                turns.append(Turn(uuid, "assistant", text, when))
            last_api_id = api_id
        else:
            last_api_id = ""
            role: Role = "system" if record.get("isCompactSummary") is True else "user"
            text, results = _user_parts(message.get("content"), unknown)
            if results:
                turns.append(Turn(f"{uuid}:result" if uuid else "", "tool", results, when))
            turns.append(Turn(uuid, role, text, when))
    if sidechain:
        report.note(f"{file.name}: {sidechain} inline subagent record(s) left out of the main thread")
    title = custom_title or next((summaries[key] for key in reversed(summaries) if key in uuids), "")
    conversation_id = f"claude-code:{file.stem}"
    if subagent:
        parent = file.parent.parent.name or session
        conversation_id = f"claude-code:{parent}:{file.stem}"
        title = title or f"Subagent: {next((t.text for t in turns if t.role == 'user'), '')}"
    return build_conversation(
        id=conversation_id,
        source="claude-code",
        turns=turns,
        report=report,
        title=title,
        project=cwd or file.parent.name,
        url=file.resolve().as_uri(),
        fallback_time=file_time(file),
    )


def _assistant_text(content: object, unknown: dict[str, int]) -> str:
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
            count_unknown(unknown, f"block {kind or '?'}")
    return "\n\n".join(part for part in parts if part.strip())


def _user_parts(content: object, unknown: dict[str, int]) -> tuple[str, str]:
    """(what the user wrote, the tool results this record carries back)."""
    if isinstance(content, str):
        return content, ""
    texts: list[str] = []
    results: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            texts.append(as_str(block.get("text")))
        elif kind == "tool_result":
            error = block.get("is_error") is True
            results.append(summarise_tool_result(_result_text(block.get("content")), error=error))
        elif kind in {"image", "document"}:
            texts.append(f"[{kind}]")
        else:
            count_unknown(unknown, f"block {kind or '?'}")
    return "\n\n".join(t for t in texts if t.strip()), "\n".join(results)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(as_str(as_dict(item).get("text")) for item in as_list(content))
