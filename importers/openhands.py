"""OpenHands conversations in its local file store: `<file store>/sessions/<conversation id>/`, the
file store being `$FILE_STORE_PATH`, else `~/.openhands` (on every OS; the Docker image mounts it
there too). Each conversation keeps `metadata.json` (its `title`, `selected_repository`,
`created_at`, `last_updated_at`), rewritten as the conversation goes on, and one file per event,
`events/<n>.json`, numbered from 0.

An event is an action (`action`, `args`) or an observation (`observation`, `content`, `extras`),
with `id`, `timestamp` (ISO, local to the server) and `source` (`user`, `agent`, `environment`).
A `message` action is what the user or the agent said; `finish` holds the agent's last words; the
other actions are tool calls (one short line each, with the `thought` the agent gave with them)
and their observations the tools' output. What OpenHands adds itself is left out: the `system`
action (the system prompt and tools), `recall` actions and observations (the workspace and
microagent knowledge it injects), `think` (the agent's reasoning), condensation and state changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from importers._common import (
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_id,
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
from importers._files import any_file, file_time, read_head, read_regular
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation

METADATA = "metadata.json"
# Actions and observations that are OpenHands' own bookkeeping or injected context, not a turn.
_SILENT_ACTIONS = {
    "system", "recall", "think", "condensation", "condensation_request", "change_agent_state", "null", "pause",
    "resume", "stop", "start", "reject", "loop_recovery", "task_tracking",
}  # fmt: skip
_SILENT_OBSERVATIONS = {
    "recall", "agent_state_changed", "null", "condense", "think", "user_rejected", "loop_detection", "success",
    "task_tracking", "delegate", "download", "chat", "message",
}  # fmt: skip
# The argument that says most about each tool call.
_TOOL_ARGUMENT = {"run": "command", "run_ipython": "code", "browse": "url", "browse_interactive": "browser_actions"}


def file_store(env: Mapping[str, str], home: Path) -> Path:
    configured = env.get("FILE_STORE_PATH", "").strip()
    return expand_home(configured, home) if configured else home / ".openhands"


class OpenHandsImporter(AgentLogImporter):
    name = "openhands"

    def default_locations(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [file_store(env, home) / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        """Each conversation's `metadata.json` (rewritten as it goes on), or, where the CLI wrote
        none, its first event."""
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        conversations = [root] if (root / "events").is_dir() else [c for c in sorted(root.iterdir()) if c.is_dir()]
        found = []
        for conversation in conversations:
            for candidate in (conversation / METADATA, conversation / "events" / "0.json"):
                if candidate.is_file():
                    found.append(candidate)
                    break
        return found

    def context_files(self, session: Path) -> list[Path]:
        """The conversation's events (and its metadata), which sync keeps beside the session file."""
        conversation = _conversation_folder(session)
        found = [conversation / METADATA, *_event_files(conversation)]
        return [file for file in found if file.is_file() and file != session]

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_event(path) or (
                path.name == METADATA and _looks_like_event(path.parent / "events/0.json")
            )
        return path.is_dir() and any_file(path, 3, _looks_like_event, limit=200)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        try:
            files = [path] if path.is_file() else self.session_files(path)
        except OSError as exc:
            raise SourceError(f"cannot list {path}: {exc.strerror or exc}") from None
        if not files:
            raise SourceError(f"no OpenHands conversations (sessions/<id>/events/*.json) under {path}")
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: _convert(file, report, unknown), "conversation")
        note_unknown(report, unknown)


def _looks_like_event(path: Path) -> bool:
    """An event file: `events/<n>.json` holding an id, a source and an action or observation."""
    if not (path.parent.name == "events" and path.suffix == ".json" and path.stem.isdigit()):
        return False
    head = read_head(path, 4096)
    return '"source"' in head and ('"action"' in head or '"observation"' in head)


def _conversation_folder(session: Path) -> Path:
    return session.parent.parent if session.parent.name == "events" else session.parent


def _event_files(conversation: Path) -> list[Path]:
    files = [file for file in (conversation / "events").glob("*.json") if file.stem.isdigit()]
    return sorted(files, key=lambda file: int(file.stem))


def _read_json(file: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff"))
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"{file.name} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise Unusable(f"{file.name} is not a JSON object")
    return value


def _convert(session: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    conversation = _conversation_folder(session)
    metadata = _read_json(conversation / METADATA) if (conversation / METADATA).is_file() else {}
    turns: list[Turn] = []
    broken = 0
    for file in _event_files(conversation):
        try:
            event = _read_json(file)
        except (Unusable, OSError):
            broken += 1
            continue
        turns.extend(_turns(file.stem, event, unknown))
    if broken:
        report.note(f"{conversation.name}: {broken} unreadable event file(s) skipped")
    return build_conversation(
        id=f"openhands:{as_id(metadata.get('conversation_id')) or conversation.name}",
        source="openhands",
        turns=turns,
        report=report,
        title=as_str(metadata.get("title")),
        created_at=parse_time(metadata.get("created_at")),
        updated_at=parse_time(metadata.get("last_updated_at")),
        project=as_str(metadata.get("selected_repository")) or None,
        fallback_time=file_time(session),
    )


def _turns(key: str, event: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    source, when = as_str(event.get("source")), parse_time(event.get("timestamp"))
    args = as_dict(event.get("args"))
    if "action" in event:
        action = as_str(event.get("action"))
        if action == "message":
            text = as_str(args.get("content"))
            if source == "user":
                return [Turn(key, "user", _with_attachments(text, args), when)]
            return [Turn(key, "assistant", text, when)] if source == "agent" else []
        if action == "finish":
            return [Turn(key, "assistant", as_str(args.get("final_thought")) or as_str(args.get("thought")), when)]
        if action in _SILENT_ACTIONS:
            return []
        if action == "call_tool_mcp":
            call = summarise_tool_call(as_str(args.get("name")), args.get("arguments"))
        elif action in _TOOL_ARGUMENT:
            call = summarise_tool_call(action, {"command": args.get(_TOOL_ARGUMENT[action])})
        elif "path" in args:
            call = summarise_tool_call(action, {"path": args.get("path")})
        else:
            count_unknown(unknown, action, "events", "action")
            return []
        lines = [as_str(args.get("thought")).strip(), call]
        return [Turn(key, "assistant", "\n\n".join(line for line in lines if line), when)]
    if "observation" in event:
        observation = as_str(event.get("observation"))
        if observation in _SILENT_OBSERVATIONS:
            return []
        text = as_str(event.get("content"))
        return [Turn(key, "tool", summarise_tool_result(text, error=observation == "error"), when)]
    count_unknown(unknown, "", "events", "kind")
    return []


def _with_attachments(text: str, args: dict[str, Any]) -> str:
    images = [url for url in args.get("image_urls") or [] if isinstance(url, str)]
    files = [url for url in args.get("file_urls") or [] if isinstance(url, str)]
    lines = [text, *(f"[file {name}]" for name in files), *("[image]" for _ in images)]
    return "\n\n".join(line for line in lines if line.strip())
