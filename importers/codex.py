"""Codex CLI rollouts: `<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl` and `archived_sessions/`.

Current files wrap every line as `{timestamp, type, payload}`; early ones had a bare metadata first
line and bare response items. Messages come from `response_item`s of type `message` only
(`event_msg` repeats them). Developer/system messages and the context Codex injects as user
messages (`<environment_context>`, `<user_instructions>`, AGENTS.md) are left out, and so is the
wrapper the IDE extension and the desktop app put around a request (the editor's open files, the
files mentioned, a prior conversation handed off as JSON): the user's text is the request itself.
Reasoning is skipped; tool calls and their output become one short line each.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
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
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, read_head
from importers._touches import touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation

_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>")
_CWD = re.compile(r"<cwd>\s*(.*?)\s*</cwd>", re.DOTALL)
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", re.IGNORECASE)
_SILENT_ITEMS = {"reasoning", "ghost_snapshot"}
# `event_msg` repeats what the response items say, for the UI; `turn_context` is settings;
# `compacted` is the summary the model continues from after compaction (the messages stay above it).
_BOOKKEEPING = {"event_msg", "turn_context", "compacted"}
_TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """`$CODEX_HOME/sessions` and `$CODEX_HOME/archived_sessions` (CODEX_HOME defaults to `~/.codex`)."""
    codex_home = env_folder(env, "CODEX_HOME", home, ".codex")
    return [codex_home / "sessions", codex_home / "archived_sessions"]


class CodexImporter(AgentLogImporter):
    name = "codex"
    resume: ClassVar[tuple[str, ...]] = ("codex", "resume", "{session}")  # the rollout's session id
    variables: ClassVar[Mapping[str, str]] = {
        "CODEX_HOME": "Codex's home folder (default ~/.codex), whose sessions/ and archived_sessions/ hold the rollouts"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home)

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(f for root in _roots(folder) for f in root.rglob("rollout-*.jsonl"))

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_rollout(path)
        return path.is_dir() and any(any_file(root, 4, _looks_like_rollout) for root in _roots(path))

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Codex rollouts (rollout-*.jsonl) under {path}")
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: _convert(file, report, unknown), "rollout")
        note_unknown(report, unknown)


def _roots(path: Path) -> list[Path]:
    """The folders holding rollouts: a Codex home's `sessions` and `archived_sessions`, or the path itself."""
    inside = [path / name for name in ("sessions", "archived_sessions") if (path / name).is_dir()]
    return inside or [path]


def _looks_like_rollout(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    first = read_head(path, 8192).split("\n", 1)[0]
    if '"session_meta"' in first:
        return True
    # Early rollouts: a bare `{id, timestamp, instructions}` line, then bare response items.
    return path.name.startswith("rollout-") and '"timestamp"' in first and '"sessionId"' not in first


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    meta: dict[str, Any] = {}
    turns: list[Turn] = []
    started: datetime | None = None
    match = _UUID.search(file.name)
    session = match.group(1) if match else file.stem
    for number, record in iter_jsonl(file, report):
        record = as_dict(record)
        kind = as_str(record.get("type"))
        if "record_type" in record:
            continue  # early rollouts' state snapshots
        if "payload" in record:
            payload, when = as_dict(record.get("payload")), parse_time(record.get("timestamp"))
        elif number == 1 or (not meta and "instructions" in record):
            kind, payload, when = "session_meta", record, parse_time(record.get("timestamp"))
        else:
            kind, payload, when = "response_item", record, None
        if kind == "session_meta":
            meta = meta or payload
            started = started or parse_time(payload.get("timestamp")) or when
        elif kind == "response_item":
            turn = _turn(payload, f"codex:{session}:{number}", when, meta, unknown)
            if turn is not None:
                turns.append(turn)
        elif kind not in _BOOKKEEPING:
            count_unknown(unknown, kind)
    session = as_id(meta.get("id")) or session
    return build_conversation(
        id=f"codex:{session}",
        source="codex",
        turns=turns,
        report=report,
        created_at=started,
        project=as_str(meta.get("cwd")) or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _turn(
    item: dict[str, Any], key: str, when: datetime | None, meta: dict[str, Any], unknown: UnknownCounts
) -> Turn | None:
    kind = as_str(item.get("type"))
    if kind == "message":
        role = as_str(item.get("role"))
        text = "\n".join(_content_texts(item.get("content"))).strip()
        if role == "user":
            if text.startswith(_INJECTED):
                cwd = _CWD.search(text)
                if cwd and not meta.get("cwd"):
                    meta["cwd"] = cwd.group(1)  # early rollouts name the cwd only here
                return None
            return Turn(key, "user", _request(text), when)
        if role == "assistant":
            return Turn(key, "assistant", text, when)
        return None  # developer and system messages are Codex's own instructions
    if kind in _TOOL_CALLS:
        action = as_dict(item.get("action"))
        arguments = item.get("arguments") or item.get("input") or action
        name = as_str(item.get("name")) or ("shell" if kind == "local_shell_call" else kind.removesuffix("_call"))
        return Turn(key, "assistant", summarise_tool_call(name, arguments), when, touches_of(name, arguments))
    if kind in _TOOL_OUTPUTS:
        output = item.get("output")
        text = output if isinstance(output, str) else as_str(as_dict(output).get("content"))
        return Turn(key, "tool", summarise_tool_result(_shown_output(text)), when)
    if kind not in _SILENT_ITEMS:
        count_unknown(unknown, kind, "response items")
    return None


def _shown_output(text: str) -> str:
    """A command's result as its text, then its exit code in words. Codex before mid-2025 wrote it as
    JSON, `{"output": "...", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}`; later ones write
    the text themselves ("Exit code: 0 / Wall time / Output:"), kept as it is."""
    if not text.startswith("{"):
        return text
    try:
        data = json.loads(text)
    except ValueError:
        return text
    output = data.get("output") if isinstance(data, dict) else None
    if not isinstance(output, str):
        return text
    code = as_dict(data.get("metadata")).get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool):
        return output
    return f"{output.rstrip()} ({'succeeded' if code == 0 else 'failed'}, exit code {code})"


def _request(text: str) -> str:
    """What the user asked, out of the wrapper Codex's IDE extension and desktop app put around it
    (`# Context from my IDE setup:`, `# Files mentioned by the user:`, `## Prior conversation with
    Codex:` and its JSON): the text after the last `## My request for Codex:`."""
    if not text.startswith("#") or _REQUEST_MARK not in text:
        return text
    return text.rsplit(_REQUEST_MARK, 1)[1].strip()


_REQUEST_MARK = "## My request for Codex:"


def _content_texts(content: object) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    for block in as_list(content):
        block = as_dict(block)
        if as_str(block.get("type")) in {"input_text", "output_text", "text"}:
            yield as_str(block.get("text"))
        elif as_str(block.get("type")) == "input_image":
            yield "[image]"
