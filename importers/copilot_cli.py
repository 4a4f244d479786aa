"""GitHub Copilot CLI sessions (`copilot`, github/copilot-cli): one event log per session,
`<copilot home>/session-state/<session id>/events.jsonl` (`<session id>.jsonl` beside them before
the folders, late 2025), the home being `$COPILOT_HOME`, else `~/.copilot` on every OS. Sessions
from before October 2025 (`history-session-state/`) are moved into this format by the CLI when the
user resumes them, and are not read here.

Each line is an event `{type, id, timestamp, parentId, data}` (its types and fields are the ones
the Copilot SDKs generate from the CLI's schema, github/copilot-sdk `session-events`):
`session.start` gives the session's id, start and working directory (`context.cwd`);
`session.title_changed` its title (the last one wins; else the first prompt gives one); `user.message`
is a prompt as the timeline shows it (`content`; `transformedContent` is what the model was sent),
its attached files named; `assistant.message` a reply, its tool requests one short line each, its
reasoning left out; `tool.execution_complete` a tool's result. Prompts the CLI sent itself (autopilot
continuations, a skill's hidden prompt, one agent's prompt to another: a `source` other than the
user) are not the user's, and a sub-agent's own events (those naming an `agentId` or a parent tool
call) belong to its task, not to the conversation. Every other event is bookkeeping; a type of a
namespace not known here is counted in the report.
"""

from __future__ import annotations

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
from importers._touches import touches_in
from importers.base import ImportReport
from storage.models import Conversation

EVENTS = "events.jsonl"
# The namespaces of the events the CLI writes; an unknown type in one of these is bookkeeping.
_KNOWN = {
    "session", "user", "assistant", "tool", "subagent", "hook", "permission", "user_input", "elicitation",
    "sampling", "mcp", "command", "external_tool", "system", "skill", "tool_search", "model", "abort",
    "pending_messages", "ui", "auto_mode_switch", "exit_plan_mode", "capabilities",
}  # fmt: skip


class CopilotCliImporter(SessionFileImporter):
    name = "copilot-cli"
    detect_depth = 3
    none_found = f"no Copilot CLI sessions (session-state/*/{EVENTS}) under {{path}}"
    variables: ClassVar[Mapping[str, str]] = {
        "COPILOT_HOME": "GitHub Copilot CLI's folder (default ~/.copilot), whose session-state/ holds the sessions"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [env_folder(env, "COPILOT_HOME", home, ".copilot") / "session-state"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "session-state" if (folder / "session-state").is_dir() else folder
        found = set(root.glob(f"*/{EVENTS}")) | set(root.glob("*.jsonl"))
        return sorted(f for f in found if f.is_file())

    def is_session(self, file: Path) -> bool:
        return _looks_like_events(file)

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _looks_like_events(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    first = read_head(path, 8192).split("\n", 1)[0]
    return '"session.start"' in first and '"copilotVersion"' in first


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    session = file.parent.name if file.name == EVENTS else file.stem
    started: dict[str, Any] = {}
    title = ""
    turns: list[Turn] = []
    for _, event in iter_jsonl(file, report):
        event = as_dict(event)
        kind, data = as_str(event.get("type")), as_dict(event.get("data"))
        key, when = as_id(event.get("id")), parse_time(event.get("timestamp"))
        if kind == "session.start":
            started = started or data
        elif kind == "session.title_changed":
            title = as_str(data.get("title")).strip() or title
        elif event.get("agentId") or data.get("parentToolCallId"):
            continue  # a sub-agent's own work, inside the task it was given
        elif kind == "user.message":
            if not data.get("isAutopilotContinuation") and as_str(data.get("source")) in {"", "user"}:
                turns.append(Turn(key, "user", _prompt(data), when))
        elif kind == "assistant.message":
            calls = [as_dict(request) for request in as_list(data.get("toolRequests"))]
            lines = [as_str(data.get("content"))]
            lines += [summarise_tool_call(as_str(call.get("name")), call.get("arguments")) for call in calls]
            touched = touches_in((as_str(call.get("name")), call.get("arguments")) for call in calls)
            turns.append(Turn(key, "assistant", "\n\n".join(line for line in lines if line.strip()), when, touched))
        elif kind == "tool.execution_complete":
            result, error = as_dict(data.get("result")), as_dict(data.get("error"))
            text = as_str(result.get("content")) if data.get("success") is not False else as_str(error.get("message"))
            turns.append(Turn(key, "tool", summarise_tool_result(text, error=data.get("success") is False), when))
        elif kind.split(".", 1)[0] not in _KNOWN:
            count_unknown(unknown, kind, "events")
    context = as_dict(started.get("context"))
    return build_conversation(
        id=f"copilot-cli:{as_id(started.get('sessionId')) or session}",
        source="copilot-cli",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(started.get("startTime")),
        project=as_str(context.get("cwd")) or as_str(context.get("gitRoot")) or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _prompt(data: dict[str, Any]) -> str:
    """A prompt as the timeline shows it, with the files and selections attached to it named."""
    attached = []
    for attachment in as_list(data.get("attachments")):
        attachment = as_dict(attachment)
        name = as_str(attachment.get("displayName")) or Path(as_str(attachment.get("path"))).name
        if name:
            attached.append(f"[file {name}]")
    return "\n\n".join(part for part in (as_str(data.get("content")), " ".join(attached)) if part.strip())
