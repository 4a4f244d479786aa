"""The task folders Cline and its forks (Roo Code, Kilo Code) keep in VS Code's global storage:
`<globalStorage>/<extension id>/tasks/<task id>/`, one folder per task, holding
`api_conversation_history.json` (what the model was sent, with tool markup and injected context),
`ui_messages.json` (what the task's panel shows, message by message, each with its time `ts`) and,
per writer, files naming the task's workspace.

A task is read from `ui_messages.json` (`claude_messages.json` before Cline 2), as the panel shows it:
each message is `{"ts", "type": "say"|"ask", "say"|"ask": kind, "text", ...}`. The task the user typed
(the first message, `say: "task"` in early Cline, `say: "text"` since) and their later replies are
the user; the model's text, its questions (`followup`, `plan_mode_respond`, JSON
`{"question"|"response", ...}`) and its result (`completion_result`) are the assistant; a tool it
used (`tool`, `command`, `use_mcp_server`, `browser_action`: JSON or a command line) is one short
line, its output one tool result. Reasoning, API request bookkeeping, checkpoints, retries and
status lines are left out; kinds not known here are counted in the report. The title is the task, as
the history list shows it; the project is the task's workspace folder, as each writer records it.

Which writer wrote a task is told by the extension's folder in its path; a task copied out of it by
the writer's own marks: Cline's focus chain file (`focus_chain_taskid_<id>.md`), the `cline_version`
its `task_metadata.json` records, its `task_progress` messages, its early `say: "task"`, and an
`api_req_started` that records the `request` without the `apiProtocol` Roo Code and Kilo Code add;
Roo Code's and Kilo Code's `history_item.json` and that `apiProtocol`. All three keep a
`task_metadata.json`; only Cline's names its version.
"""

from __future__ import annotations

import functools
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
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    note_unknown,
    parse_time,
    shorten,
    summarise_tool_call,
    summarise_tool_result,
    system_folders,
)
from importers._files import file_time, open_regular, read_head, read_regular
from importers._json import BrokenJson, Malformed, iter_json_array
from importers._touches import VERBS, ran, touches_of
from importers._vscode import user_folders
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation, Role, Touch

__all__ = [
    "API_HISTORY",
    "TaskFolderImporter",
    "first_request",
    "read_json",
    "workspace_in_environment",
    "workspace_in_history",
]

MESSAGE_FILES = ("ui_messages.json", "claude_messages.json")
API_HISTORY = "api_conversation_history.json"

# What the model said, or asked the user, in words.
_ASSISTANT_SAYS = {"text", "completion_result"}
_ASSISTANT_ASKS = {"followup", "plan_mode_respond", "act_mode_respond", "completion_result", "new_task"}
# The model using a tool, and what came back.
_TOOL_CALLS = {"tool", "command", "use_mcp_server", "browser_action", "browser_action_launch", "use_subagents"}
_TOOL_RESULTS = {"command_output", "mcp_server_response", "browser_action_result", "subtask_result"}
# What the panel shows about the run rather than the conversation.
_SILENT = {
    "reasoning",
    "api_req_started",
    "api_req_finished",
    "api_req_retried",
    "api_req_retry_delayed",
    "api_req_rate_limit_wait",
    "api_req_deleted",
    "api_req_failed",
    "deleted_api_reqs",
    "error",
    "error_retry",
    "diff_error",
    "clineignore_error",
    "rooignore_error",
    "command_permission_denied",
    "checkpoint_created",
    "checkpoint_saved",
    "shell_integration_warning",
    "shell_integration_warning_with_suggestion",
    "mcp_server_request_started",
    "mcp_notification",
    "load_mcp_documentation",
    "generate_explanation",
    "info",
    "task_progress",
    "hook_status",
    "hook_output_stream",
    "subagent",
    "subagent_usage",
    "conditional_rules_applied",
    "resume_task",
    "resume_completed_task",
    "mistake_limit_reached",
    "auto_approval_max_req_reached",
    "condense",
    "condense_context",
    "condense_context_error",
    "sliding_window_truncation",
    "summarize_task",
    "report_bug",
    "too_many_tools_warning",
    "codebase_search_result",
    "user_edit_todos",
    "image",
    "user_feedback_diff",
}
# Parts of a tool's JSON that are its payload (a file's content, a diff, a screenshot), not what it did.
_BULKY = {"content", "diff", "screenshot", "logs", "images", "base64", "todos", "result"}
_ENVIRONMENT_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\) Files")
_ROOT = re.compile(r"^- (.+?): (.+?)(?: \([^()]*\))?$", re.MULTILINE)
_HISTORY_HEAD = 262144  # the first request, which names the workspace, is at the start of the model's history


class TaskFolderImporter(AgentLogImporter):
    """One writer of task folders: its format name, the folder names it keeps its global storage
    under (one per editor and publisher spelling), whether it is Cline or one of Roo Code's line
    (told apart by their marks outside the extension's folder), and where it records a task's workspace."""

    name: ClassVar[str]
    extension_ids: ClassVar[tuple[str, ...]]
    cline_line: ClassVar[bool] = True  # Cline itself; Roo Code and its forks say False
    variables: ClassVar[Mapping[str, str]] = system_folders("XDG_CONFIG_HOME", "APPDATA")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _EXTENSIONS[cls.name] = cls.extension_ids  # so each writer's detection knows the others' folders

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [
            user / "globalStorage" / ext / "tasks"
            for user in user_folders(env, home, platform)
            for ext in self.extension_ids
        ]

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(task / name for task in _task_folders(folder, self.extension_ids) if (name := _messages(task)))

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.name in MESSAGE_FILES and self._claims(path) and path.parent.parent.name == "tasks"
        tasks = _task_folders(path, self.extension_ids)[:20] if path.is_dir() else []
        return any(self._claims(task / name) for task in tasks if (name := _messages(task)))

    def project(self, session: Path, messages: list[dict[str, Any]]) -> str | None:
        """The task's workspace folder, as this writer records it (`session`: its messages file)."""
        raise NotImplementedError

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no {self.name} tasks (tasks/<id>/ui_messages.json) under {path}")
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: self._convert(file, report, unknown), "task")
        note_unknown(report, unknown)

    def _claims(self, messages: Path) -> bool:
        """Whether this writer wrote these messages: by the extension's folder in the path, else by
        how the first message is written."""
        parts = {part.lower() for part in messages.resolve().parts}
        owners = {ext for ids in _EXTENSIONS.values() for ext in ids if ext in parts}
        if owners:
            return bool(owners & set(self.extension_ids))
        return _written_by_cline(messages) == self.cline_line

    def _convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        messages = _load_messages(file, report)
        task_id = report.original(file).parent.name
        turns = [turn for number, message in enumerate(messages) if (turn := self._turn(number, message, unknown))]
        return build_conversation(
            id=f"{self.name}:{task_id}",
            source=self.name,
            turns=turns,
            report=report,
            project=self.project(file, messages),
            url=report.original(file).as_uri(),
            fallback_time=file_time(file),
        )

    def _turn(self, number: int, message: dict[str, Any], unknown: UnknownCounts) -> Turn | None:
        kind = as_str(message.get("type"))
        what = as_str(message.get(kind)) if kind in {"say", "ask"} else ""
        text = as_str(message.get("text"))
        when = parse_time(message.get("ts"))
        key = as_id(message.get("ts"))  # its time, unique within the task: ids survive a deleted message
        role: Role
        touches: tuple[Touch, ...] = ()
        if kind == "say" and (what in {"user_feedback", "task"} or (what == "text" and number == 0)):
            role, text = "user", _with_attachments(text, message)
        elif (kind == "say" and what in _ASSISTANT_SAYS) or (kind == "ask" and what in _ASSISTANT_ASKS):
            # Cline marks a result whose changes can be reviewed by appending a flag to its text.
            role, text = "assistant", _spoken(text).removesuffix(_CHANGES_FLAG)
        elif what in _TOOL_CALLS:
            role, text, touches = "assistant", _tool_line(what, text), _tool_touches(what, text)
        elif what in _TOOL_RESULTS:
            role, text = "tool", summarise_tool_result(_result_text(text)) if text.strip() else ""
        else:
            if what not in _SILENT:
                count_unknown(unknown, what or kind, "messages", f"{kind or 'message'} type")
            return None
        return Turn(key, role, text, when, touches) if text.strip() else None


_CHANGES_FLAG = "HAS_CHANGES"
_EXTENSIONS: dict[str, tuple[str, ...]] = {}  # format name → its extension's storage folders


_CLINE_MARKS = re.compile(r'"say"\s*:\s*"(?:task|task_progress)"')
_ROO_MARKS = re.compile(r'\\"apiProtocol\\"')
_REQUEST = re.compile(r'"say"\s*:\s*"api_req_started"\s*,\s*"text"\s*:\s*"\{\\"request\\"')


def _written_by_cline(messages: Path) -> bool:
    """Whether a task folder found outside any extension's folder is Cline's (else Roo Code's line):
    by the marks each writer leaves, in the task folder and the head of its messages."""
    task = messages.parent
    if any(task.glob("focus_chain_taskid_*.md")) or '"cline_version"' in read_head(task / "task_metadata.json", 65536):
        return True
    if (task / "history_item.json").is_file():
        return False
    head = read_head(messages, 65536)
    if _ROO_MARKS.search(head):
        return False
    return bool(_CLINE_MARKS.search(head) or _REQUEST.search(head))


def _messages(task: Path) -> str:
    return next((name for name in MESSAGE_FILES if (task / name).is_file()), "")


def _task_folders(path: Path, extension_ids: tuple[str, ...]) -> list[Path]:
    """Task folders at or under `path`: a task folder, a `tasks` folder, the extension's storage
    folder, or an editor's `User` folder (its global storage holding the extension's)."""
    if _messages(path):
        return [path]
    roots = [path / "tasks"] + [path / "globalStorage" / ext / "tasks" for ext in extension_ids]
    tasks = path if path.name == "tasks" else next((root for root in roots if root.is_dir()), None)
    if tasks is None:
        return []
    try:
        return sorted(child for child in tasks.iterdir() if child.is_dir())
    except OSError:
        return []


def _load_messages(file: Path, report: ImportReport) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    try:
        with open_regular(file) as handle:
            for item in iter_json_array(handle, report):
                if not isinstance(item, Malformed):
                    messages.append(as_dict(item))
    except BrokenJson as exc:
        if not messages:
            raise Unusable(f"not readable as the task's messages ({exc})") from None
        report.note(f"{file.parent.name}/{file.name}: {exc}; the messages before it were read")
    return messages


def _with_attachments(text: str, message: dict[str, Any]) -> str:
    images = len(as_list(message.get("images")))
    files = [Path(as_str(f)).name for f in as_list(message.get("files")) if as_str(f)]
    extra = (["[image]"] * images) + [f"[file {name}]" for name in files]
    return "\n\n".join(part for part in [text, " ".join(extra)] if part.strip())


def _spoken(text: str) -> str:
    """The words of a message that may be JSON: a question, a plan, a new task's context."""
    data = _json_object(text)
    if data is None:
        return text
    return next((as_str(data[key]) for key in ("question", "response", "context", "text") if as_str(data.get(key))), "")


def _tool_line(kind: str, text: str) -> str:
    data = _json_object(text)
    if data is None:  # a command line, or the page a browser was launched at
        if kind == "browser_action_launch":
            return summarise_tool_call("browser_action", {"url": text})
        return summarise_tool_call("execute_command" if kind == "command" else kind, {"command": text})
    if kind == "use_mcp_server":
        name = ".".join(part for part in (as_str(data.get("serverName")), as_str(data.get("toolName"))) if part)
        return summarise_tool_call(name or "mcp", data.get("arguments") or as_str(data.get("uri")))
    name = as_str(data.get("tool")) or as_str(data.get("action")) or kind
    arguments = {key: value for key, value in data.items() if key not in _BULKY and key not in {"tool", "action"}}
    batch = [as_str(as_dict(entry).get("path")) for entry in as_list(data.get("batchFiles"))]
    if any(batch):
        arguments = {"path": " ".join(path for path in batch if path)}
    return summarise_tool_call(name, arguments)


# What Cline and its forks name their file tools in a task's messages (the tools' own names differ).
_VERBS: Mapping[str, Action] = {
    **VERBS,
    "editedexistingfile": "edited",
    "applieddiff": "edited",
    "insertcontent": "edited",
    "searchandreplace": "edited",
    "filedeleted": "edited",
    "newfilecreated": "created",
}


def _tool_touches(kind: str, text: str) -> tuple[Touch, ...]:
    """What one of the task's tool messages touched: a file (its JSON names the tool and the path, or
    a batch of paths) or, for a command, the command line itself."""
    data = _json_object(text)
    if data is None:
        return ran(text) if kind == "command" else ()
    name = as_str(data.get("tool")) or as_str(data.get("action")) or kind
    batch = [as_str(as_dict(entry).get("path")) for entry in as_list(data.get("batchFiles"))]
    return touches_of(name, {"paths": batch} if any(batch) else data, _VERBS)


def _result_text(text: str) -> str:
    data = _json_object(text)
    if data is None:
        return text
    return as_str(data.get("logs")) or as_str(data.get("output")) or as_str(data.get("text")) or shorten(text, 300)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def first_request(messages: list[dict[str, Any]]) -> str:
    """The first request the panel's `api_req_started` message shows (Cline: environment included)."""
    for message in messages:
        if message.get("say") == "api_req_started":
            return as_str(as_dict(_json_object(as_str(message.get("text")))).get("request"))
    return ""


def workspace_in_environment(text: str) -> str:
    """The workspace folder the writer names in the environment details it sends the model; with
    several folders open (Cline's multi-root workspaces) the primary one, named in `# Workspace
    Roots` as `- <name>: <path> (<vcs>)`."""
    found = _ENVIRONMENT_CWD.search(text)
    if found is None:
        return ""
    named = found.group(1).strip()
    if not named.startswith("Primary:"):
        return named
    primary = named.removeprefix("Primary:").strip()
    roots = text[: found.start()].rpartition("# Workspace Roots")[2].replace("\\n", "\n")
    return next((path for name, path in _ROOT.findall(roots) if name == primary), "")


def workspace_in_history(session: Path) -> str:
    """The workspace named in the first request of the task's history for the model, beside `session`."""
    return workspace_in_environment(read_head(session.parent / API_HISTORY, _HISTORY_HEAD))


@functools.lru_cache(maxsize=64)
def json_file(path: str, size: int, mtime_ns: int) -> Any:
    """A small JSON file (a history list, a history item), parsed once per change."""
    del size, mtime_ns  # part of the cache key only
    try:
        return json.loads(read_regular(Path(path)).decode("utf-8", "replace").lstrip("\ufeff"))
    except (OSError, ValueError, RecursionError):
        return None


def read_json(path: Path) -> Any:
    try:
        mark = path.stat()
    except OSError:
        return None
    return json_file(str(path), mark.st_size, mark.st_mtime_ns)
