"""OpenHands conversations, in the two stores OpenHands has kept them in on this machine (both under
`~/.openhands` on every OS).

**OpenHands 1.x** (`openhands`: the CLI and everything built on its agent SDK):
`<conversations dir>/<conversation id, hex>/`, the dir being `$OPENHANDS_CONVERSATIONS_DIR`, else
`$OPENHANDS_PERSISTENCE_DIR/conversations`, else `~/.openhands/conversations`; Agent Canvas's agent
server writes the same files to `$OH_CONVERSATIONS_PATH`, else `~/.openhands/agent-canvas/conversations`.
`base_state.json` is
the conversation's state (its `id`, `workspace.working_dir`, and `leaf_event_id`, the end of the
branch in use), saved as it changes; `events/event-<n, 5+ digits>-<event id>.json` one event each,
`{kind, id, timestamp, source, parent_id}`. Events form a tree: the conversation is the chain of
parents from the leaf back (an event without `parent_id` has the one before it as parent), so a
branch left behind is not read. `MessageEvent`s are what the user and the agent said
(`llm_message.content` text parts; the knowledge OpenHands adds, `extended_content`, and a resumed
conversation's replayed transcript and the follow-ups its critic sends in the user's name when it
judges a task unfinished are left out), `ActionEvent`s the agent's tool calls (one short
line, after the `thought` it gave; `reasoning_content` and thinking blocks are left out),
`ObservationEvent`s, `UserRejectObservation`s and `AgentErrorEvent`s the tools' output; the system
prompt, condensations, state updates and the like are bookkeeping.

**OpenHands 0.x** (`openhands-v0`): its file store `<file store>/sessions/<conversation id>/`, the
file store being `$FILE_STORE_PATH`, else `~/.openhands` (the Docker image mounts it there too).
Each conversation keeps `metadata.json` (its `title`, `selected_repository`,
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
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

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
    env_folder,
    expand_home,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, read_head, read_regular
from importers._touches import VERBS, touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation

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
# OpenHands' own name for running a command (its first sessions' `run` action), beside the shared ones.
_VERBS: Mapping[str, Action] = {**VERBS, "run": "ran"}


BASE_STATE = "base_state.json"
_EVENT_FILE = re.compile(r"^event-(\d{5,})-[0-9A-Za-z-]{8,}\.json$")
_ROOT = "__root__"  # the parent of a root made after the user went back to the start
_RESUMED = "<<RESUMED CONVERSATION>>"  # a transcript replayed into a new session: not typed
# The follow-up OpenHands' critic sends in the user's name when it judges a task unfinished.
_REFINEMENT = re.compile(r"\AThe task appears incomplete \(iteration \d+")
# 1.x events that are bookkeeping or what OpenHands adds itself.
_SILENT_KINDS = {
    "SystemPromptEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
    "ConversationStateUpdateEvent", "ConversationErrorEvent", "PauseEvent", "InterruptEvent", "TokenEvent",
    "StreamingDeltaEvent", "HookExecutionEvent", "LLMCompletionLogEvent",
}  # fmt: skip


def conversations_folders(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where OpenHands 1.x keeps conversations: the CLI's folder, and Agent Canvas' (its agent server's
    `$OH_CONVERSATIONS_PATH`, `~/.openhands/agent-canvas/conversations` unless moved)."""
    base = env_folder(env, "OPENHANDS_PERSISTENCE_DIR", home, ".openhands")
    configured = env.get("OPENHANDS_CONVERSATIONS_DIR", "").strip()
    cli = expand_home(configured, home) if configured else base / "conversations"
    return [cli, env_folder(env, "OH_CONVERSATIONS_PATH", home, ".openhands", "agent-canvas", "conversations")]


class OpenHandsImporter(AgentLogImporter):
    """OpenHands 1.x: `conversations/<id>/base_state.json` and its `events/`."""

    name = "openhands"
    variables: ClassVar[Mapping[str, str]] = {
        "OPENHANDS_CONVERSATIONS_DIR": "the OpenHands CLI's conversations folder (default ~/.openhands/conversations)",
        "OPENHANDS_PERSISTENCE_DIR": "the OpenHands CLI's folder (default ~/.openhands), whose conversations/ it uses",
        "OH_CONVERSATIONS_PATH": "the conversations folder of OpenHands' agent server (Agent Canvas)",
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return conversations_folders(env, home)

    def session_files(self, folder: Path) -> list[Path]:
        """Each conversation's `base_state.json`, saved again as the conversation goes on."""
        root = folder / "conversations" if (folder / "conversations").is_dir() else folder
        if (root / BASE_STATE).is_file():
            return [root / BASE_STATE]
        return sorted(state for state in root.glob(f"*/{BASE_STATE}") if state.is_file())

    def context_files(self, session: Path) -> list[Path]:
        """The conversation's events, which sync keeps beside its state."""
        return [file for _, file in _numbered_events(session.parent)]

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return (path.name == BASE_STATE and bool(_numbered_events(path.parent))) or _looks_like_sdk_event(path)
        return (
            path.is_dir()
            and bool(self.session_files(path))
            and any(_numbered_events(state.parent) for state in self.session_files(path)[:20])
        )

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no OpenHands conversations (<id>/base_state.json) under {path}")
        unknown: UnknownCounts = {}
        convert = lambda file: _convert_sdk(file, report, unknown)  # noqa: E731
        yield from convert_each(path, files, report, convert, "conversation")
        note_unknown(report, unknown)


def _numbered_events(conversation: Path) -> list[tuple[int, Path]]:
    found = []
    for file in (conversation / "events").glob("event-*.json"):
        match = _EVENT_FILE.match(file.name)
        if match and file.is_file():
            found.append((int(match.group(1)), file))
    return sorted(found)


def _looks_like_sdk_event(path: Path) -> bool:
    if not (_EVENT_FILE.match(path.name) and path.parent.name == "events"):
        return False
    head = read_head(path, 4096)
    return '"kind"' in head and '"source"' in head


def _convert_sdk(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    conversation = file.parent.parent if file.parent.name == "events" else file.parent
    state = _read_json(conversation / BASE_STATE) if (conversation / BASE_STATE).is_file() else {}
    events: list[dict[str, Any]] = []
    broken = 0
    for _, event_file in _numbered_events(conversation):
        try:
            events.append(_read_json(event_file))
        except (Unusable, OSError):
            broken += 1
    if broken:
        report.note(f"{conversation.name}: {broken} unreadable event file(s) skipped")
    turns = [
        turn for event in _branch(events, as_id(state.get("leaf_event_id"))) for turn in _sdk_turns(event, unknown)
    ]
    return build_conversation(
        id=f"openhands:{as_id(state.get('id')).replace('-', '') or conversation.name}",
        source="openhands",
        turns=turns,
        report=report,
        project=as_str(as_dict(state.get("workspace")).get("working_dir")) or None,
        fallback_time=file_time(file),
    )


def _branch(events: list[dict[str, Any]], leaf: str) -> list[dict[str, Any]]:
    """The events of the branch in use, root first: parents from the leaf (else the last event that
    is part of the tree) back; an event without `parent_id` has the one before it as parent."""
    index = {as_id(event.get("id")): number for number, event in enumerate(events) if as_id(event.get("id"))}
    if leaf not in index:
        tree = [n for n, e in enumerate(events) if as_str(e.get("kind")) not in _SILENT_KINDS]
        if not tree:
            return []
        leaf = as_id(events[tree[-1]].get("id"))
        if leaf not in index:
            return events
    chain: list[dict[str, Any]] = []
    number: int | None = index[leaf]
    while number is not None and len(chain) <= len(events):
        event = events[number]
        chain.append(event)
        parent = event.get("parent_id")
        if parent == _ROOT:
            break
        number = index.get(as_id(parent)) if parent is not None else (number - 1 if number > 0 else None)
    return chain[::-1]


def _sdk_turns(event: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    kind, key, when = as_str(event.get("kind")), as_id(event.get("id")), parse_time(event.get("timestamp"))
    if kind == "MessageEvent":
        message = as_dict(event.get("llm_message"))
        text = _content_text(message.get("content"))
        if text.lstrip().startswith(_RESUMED) or _REFINEMENT.match(text):
            return []
        source = as_str(event.get("source"))
        if source == "user":
            return [Turn(key, "user", text, when)]
        return [Turn(key, "assistant", text, when)] if source == "agent" else []
    if kind == "ActionEvent":
        call = as_dict(event.get("tool_call"))
        name = as_str(event.get("tool_name")) or as_str(call.get("name"))
        line = summarise_tool_call(name, call.get("arguments"))
        thought = _content_text(event.get("thought")).strip()
        touched = touches_of(name, call.get("arguments") or event.get("action"), _VERBS)
        return [Turn(key, "assistant", "\n\n".join(part for part in (thought, line) if part), when, touched)]
    if kind == "ObservationEvent":
        observation = as_dict(event.get("observation"))
        text = summarise_tool_result(_content_text(observation.get("content")), error=bool(observation.get("is_error")))
        return [Turn(key, "tool", text, when)]
    if kind == "UserRejectObservation":
        return [Turn(key, "tool", summarise_tool_result(as_str(event.get("rejection_reason")), error=True), when)]
    if kind == "AgentErrorEvent":
        return [Turn(key, "tool", summarise_tool_result(as_str(event.get("error")), error=True), when)]
    if kind not in _SILENT_KINDS:
        count_unknown(unknown, kind, "events", "kind")
    return []


def _content_text(content: object) -> str:
    """Text parts of a message or observation (images as a short line)."""
    if isinstance(content, str):
        return content
    lines = []
    for part in content if isinstance(content, list) else []:
        part = as_dict(part)
        if part.get("type") == "text":
            lines.append(as_str(part.get("text")))
        elif part.get("type") == "image":
            lines.append("[image]")
    return "\n\n".join(line for line in lines if line.strip())


def file_store(env: Mapping[str, str], home: Path) -> Path:
    return env_folder(env, "FILE_STORE_PATH", home, ".openhands")


class OpenHandsV0Importer(AgentLogImporter):
    """OpenHands 0.x: the file store's `sessions/<id>/events/<n>.json`."""

    name = "openhands-v0"
    variables: ClassVar[Mapping[str, str]] = {
        "FILE_STORE_PATH": "OpenHands 0.x's file store (default ~/.openhands), whose sessions/ holds the chats"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
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
            raise SourceError(f"no OpenHands 0.x conversations (sessions/<id>/events/*.json) under {path}")
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
        id=f"openhands-v0:{as_id(metadata.get('conversation_id')) or conversation.name}",
        source="openhands-v0",
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
        touched = touches_of(as_str(args.get("name")), args.get("arguments")) if action == "call_tool_mcp" else ()
        touched = touched or touches_of(action, args, _VERBS)
        return [Turn(key, "assistant", "\n\n".join(line for line in lines if line), when, touched)]
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
