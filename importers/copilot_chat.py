"""GitHub Copilot Chat in VS Code: the chat sessions VS Code itself keeps (`ChatSessionStore`, in
microsoft/vscode's `chat/common/model/`), one file per session:
`<User>/workspaceStorage/<workspace id>/chatSessions/<session id>.json[l]`, and for windows with no
folder open `<User>/globalStorage/emptyWindowChatSessions/<session id>.json[l]`.

Two layouts, both read:
- up to VS Code 1.108, `<id>.json`: the session as one JSON document (`ISerializableChatData`,
  versions 1-3: `sessionId`, `creationDate`, `lastMessageDate`, `customTitle`, `requests`);
- since 1.109, `<id>.jsonl`: an append log of changes to that same document (`ObjectMutationLog`),
  replayed as VS Code replays it: `{"kind": 0, "v": document}` starts it, `{"kind": 1, "k": path, "v"}`
  sets a value, `{"kind": 2, "k": path, "v": items, "i": start}` cuts a list at `i` and appends,
  `{"kind": 3, "k": path}` deletes. When both files exist VS Code reads the log, and so does this.

Each request is the user's message (`message.text`) and its response the assistant's: the model's
markdown, files it referred to by name, and one line per tool it ran (`toolInvocationSerialized`,
named by its past-tense message); its thinking is left out. Times are the request's `timestamp` and
the response's `completedAt` (or the request's time plus `result.timings.totalElapsed`). The title is
VS Code's: the custom or generated title, else the first line of the first request (50 characters).
The project is the workspace's folder (`workspace.json` beside `chatSessions`).
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
    Unusable,
    as_dict,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    note_unknown,
    parse_time,
    shorten,
    summarise_tool_call,
    system_folders,
)
from importers._files import file_time, iter_jsonl, read_head, read_regular
from importers._touches import VERBS, file_touch, ran
from importers._vscode import uri_path, user_folders, workspace_folder
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation, Touch

SESSIONS = "chatSessions"
EMPTY_WINDOW = "emptyWindowChatSessions"
# Response parts that show progress, choices or bookkeeping rather than what the model said.
_SILENT_PARTS = {
    "thinking",
    "codeblockUri",
    "undoStop",
    "progressMessage",
    "progressTaskSerialized",
    "prepareToolInvocation",
    "mcpServersStarting",
    "mcpServersStartingSerialized",
    "clearToPreviousToolInvocation",
    "confirmation",
    "elicitationSerialized",
    "questionCarousel",
    "planReview",
    "command",
    "extensions",
    "pullRequest",
    "treeData",
    "multiDiffData",
    "workspaceEdit",
    "hook",
    "disabledClaudeHooks",
    "autoModeResolution",
    "systemNotification",
    "info",
    "warning",
    "voiceProgress",
}
_EDITS = {"textEditGroup", "notebookEditGroup", "externalEdit"}
_SUFFIXES = {".json", ".jsonl"}
_EMPTY_LINK = re.compile(r"\[\]\(([^)\s]+)\)")  # `Read [](file:///src/app.ts)`: a file pill with no text
_LOG_START = re.compile(r'^\{\s*"kind"\s*:\s*0\s*,\s*"v"\s*:\s*\{')  # a log's first entry: the whole session


def default_locations(env: Mapping[str, str], home: Path, platform: str | None = None) -> list[Path]:
    """Each VS Code-family editor's `workspaceStorage` and its empty-window sessions."""
    found: list[Path] = []
    for user in user_folders(env, home, platform):
        found += [user / "workspaceStorage", user / "globalStorage" / EMPTY_WINDOW]
    return found


class CopilotChatImporter(AgentLogImporter):
    name = "copilot-chat"
    variables = system_folders("XDG_CONFIG_HOME", "APPDATA")

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home, platform)

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(_session_files(folder))

    def context_files(self, session: Path) -> list[Path]:
        workspace = session.parent.parent / "workspace.json"
        return [workspace] if session.parent.name == SESSIONS and workspace.is_file() else []

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_session(path)
        # A folder of Cursor's keeps Cursor's chats, whatever else a VS Code fork leaves in it.
        if not path.is_dir() or "Cursor" in path.resolve().parts:
            return False
        return any(_looks_like_session(file) for file in _session_files(path)[:20])

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else sorted(_session_files(path, superseded=True))
        if not files:
            raise SourceError(f"no VS Code chat sessions (chatSessions/*.json, *.jsonl) under {path}")
        current: list[Path] = []
        for file in files:
            if file.suffix == ".json" and file.with_suffix(".jsonl").is_file():
                report.skip(str(file.relative_to(path)), f"superseded by {file.stem}.jsonl (VS Code now keeps a log)")
            else:
                current.append(file)
        unknown: UnknownCounts = {}
        yield from convert_each(path, current, report, lambda file: _convert(file, report, unknown), "chat session")
        note_unknown(report, unknown)


def _session_files(folder: Path, superseded: bool = False) -> list[Path]:
    """Session files at `folder`: a sessions folder, a `workspaceStorage`, `globalStorage` or `User`
    folder, or a workspace's storage folder. `superseded`: also the `.json` a `.jsonl` replaced."""
    if folder.name in {SESSIONS, EMPTY_WINDOW}:
        places = [folder]
    elif folder.name == "workspaceStorage":
        places = sorted(folder.glob(f"*/{SESSIONS}"))
    elif folder.name == "globalStorage":
        places = [folder / EMPTY_WINDOW]
    else:
        places = [folder / SESSIONS, folder / "globalStorage" / EMPTY_WINDOW]
        places += sorted((folder / "workspaceStorage").glob(f"*/{SESSIONS}"))
    found = [
        file for place in places if place.is_dir() for file in place.iterdir() if file.suffix in {".json", ".jsonl"}
    ]
    if superseded:
        return [file for file in found if file.is_file()]
    return [f for f in found if f.is_file() and not (f.suffix == ".json" and f.with_suffix(".jsonl").is_file())]


def _looks_like_session(path: Path) -> bool:
    if path.suffix not in {".json", ".jsonl"}:
        return False
    head = read_head(path, 8192).lstrip()
    if path.suffix == ".jsonl":
        return _LOG_START.match(head) is not None and '"sessionId"' in head
    return head.startswith("{") and '"requests"' in head and ('"requesterUsername"' in head or '"sessionId"' in head)


def _document(file: Path, report: ImportReport) -> dict[str, Any]:
    """The session as VS Code has it after reading the file."""
    if file.suffix == ".json":
        try:
            return as_dict(json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff")))
        except ValueError as exc:
            raise Unusable(f"not valid JSON ({exc})") from None
    state: Any = None
    for _, entry in iter_jsonl(file, report):
        entry = as_dict(entry)
        kind, path = entry.get("kind"), as_list(entry.get("k"))
        if kind == 0:
            state = entry.get("v")
        elif state is None:
            raise Unusable("the log does not start with the session (kind 0)")
        elif kind == 1:
            _set(state, path, entry.get("v"))
        elif kind == 2:
            _push(state, path, entry.get("v"), entry.get("i"))
        elif kind == 3:
            _set(state, path, None)
    if not isinstance(state, dict):
        raise Unusable("no session in the log")
    return state


def _parent(state: Any, path: list[Any]) -> Any:
    for key in path[:-1]:
        state = state[key]
    return state


def _set(state: Any, path: list[Any], value: Any) -> None:
    if not path:  # a whole new root: VS Code keeps the one it has
        return
    _parent(state, path)[path[-1]] = value


def _push(state: Any, path: list[Any], values: Any, start: Any) -> None:
    if not path:
        return
    parent = _parent(state, path)
    items = parent[path[-1]] if isinstance(parent[path[-1]], list) else []
    if isinstance(start, int) and not isinstance(start, bool):
        del items[start:]
    items.extend(as_list(values))
    parent[path[-1]] = items


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    data = _document(file, report)
    session = as_str(data.get("sessionId")) or file.stem
    requests = [as_dict(request) for request in as_list(data.get("requests"))]
    turns: list[Turn] = []
    for number, request in enumerate(requests):
        key = as_str(request.get("requestId")) or f"{session}:{number}"
        asked = parse_time(request.get("timestamp"))
        turns.append(Turn(key, "user", _message_text(request.get("message")), asked))
        answer = _response_text(request.get("response"), unknown)
        touched = _response_touches(request.get("response"))
        answer_key = as_str(request.get("responseId")) or f"{key}:response"
        turns.append(Turn(answer_key, "assistant", answer, _answered(request), touched))
    first = _message_text(requests[0].get("message")) if requests else ""
    title = as_str(data.get("customTitle")) or shorten(first.split("\n", 1)[0], 50)  # VS Code's list shows 50
    return build_conversation(
        id=f"copilot-chat:{session}",
        source="copilot-chat",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(data.get("creationDate")),
        updated_at=parse_time(data.get("lastMessageDate")),
        project=_project(file),
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _message_text(message: object) -> str:
    if isinstance(message, str):  # the earliest sessions kept the text alone
        return message
    return as_str(as_dict(message).get("text"))


def _answered(request: dict[str, Any]) -> Any:
    """When the response ended: its `completedAt`, else the request's time plus the time it took."""
    completed = parse_time(as_dict(request.get("modelState")).get("completedAt"))
    if completed is not None:
        return completed
    asked = request.get("timestamp")
    elapsed = as_dict(as_dict(request.get("result")).get("timings")).get("totalElapsed")
    if isinstance(asked, int | float) and isinstance(elapsed, int | float) and elapsed >= 0:
        return parse_time(asked + elapsed)
    return parse_time(asked)


def _response_text(parts: object, unknown: UnknownCounts) -> str:
    """The response as the chat shows it: markdown with files named inline, one line per tool."""
    if isinstance(parts, str):
        return parts
    chunks: list[str] = []
    text = ""
    after_edit = False
    for part in as_list(parts):
        part = as_dict(part)
        kind = as_str(part.get("kind"))
        if not kind and "value" in part:  # markdown, serialised as VS Code's MarkdownString
            text += as_str(part.get("value"))
        elif kind == "markdownContent" or kind == "markdownVuln":
            text += as_str(as_dict(part.get("content")).get("value"))
        elif kind == "inlineReference":
            text += f"`{_reference_name(part)}`"
        elif kind == "toolInvocationSerialized" or kind in _EDITS:
            chunks.append(_without_edit_fences(text, after_edit, kind in _EDITS))
            text = ""
            chunks.append(_tool_line(kind, part))
            after_edit = kind in _EDITS
        elif kind not in _SILENT_PARTS:
            count_unknown(unknown, kind, "response parts", "kind")
    chunks.append(_without_edit_fences(text, after_edit, False))
    return "\n\n".join(chunk.strip() for chunk in chunks if chunk.strip())


def _without_edit_fences(text: str, after_edit: bool, before_edit: bool) -> str:
    """The text around an edit without the code fence the edit's block was written in: Copilot
    opens a fence, puts the edit (a file and its changes, shown as one line here) inside and closes
    it, which would leave an empty fence on either side."""
    if before_edit and len(_FENCE.findall(text)) % 2:
        text = _OPEN_AT_END.sub("", text)
    if after_edit and len(_FENCE.findall(text)) % 2:
        text = _CLOSE_AT_START.sub("", text, count=1)
    return text


_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
_OPEN_AT_END = re.compile(r"(?:^|\n)[ \t]*(?:```|~~~)[^\n]*\s*$")
_CLOSE_AT_START = re.compile(r"^\s*(?:```|~~~)[ \t]*(?:\n|$)")


def _reference_name(part: dict[str, Any]) -> str:
    if as_str(part.get("name")):
        return as_str(part["name"])
    reference = as_dict(part.get("inlineReference"))
    uri = reference.get("uri") if "uri" in reference else reference  # a location, or the file itself
    return Path(uri_path(uri).replace("\\", "/")).name or as_str(reference.get("name")) or "file"


# Copilot's own names for its file tools (`copilot_` left off), beside the ones agents share.
_VERBS: Mapping[str, Action] = {
    **VERBS,
    "readfile": "read",
    "createfile": "created",
    "insertedit": "edited",
    "replacestring": "edited",
    "multireplacestring": "edited",
    "applypatch": "edited",
    "editnotebook": "edited",
    "editfile": "edited",
    "runinterminal": "ran",
}


def _response_touches(parts: object) -> tuple[Touch, ...]:
    """What the response's edits and tool calls touched: an edit names its file's URI, a terminal call
    its command line, a file tool its file in the line it shows (`Read [](file:///src/app.ts)`)."""
    touches: list[Touch] = []
    for part in map(as_dict, as_list(parts)):
        kind = as_str(part.get("kind"))
        if kind in _EDITS:
            touches.append(file_touch("edited", uri_path(part.get("uri"))))
        elif kind == "toolInvocationSerialized":
            touches += _tool_touches(part)
    return tuple(touch for touch in touches if touch.target)


def _tool_touches(part: dict[str, Any]) -> tuple[Touch, ...]:
    terminal = as_dict(part.get("toolSpecificData"))
    if terminal.get("kind") == "terminal":
        return ran(as_str(as_dict(terminal.get("commandLine")).get("original")) or as_str(terminal.get("command")))
    action = _VERBS.get(as_str(part.get("toolId")).removeprefix("copilot_").casefold())
    if action is None or action == "ran":
        return ()
    message = part.get("pastTenseMessage") or part.get("invocationMessage")
    said = as_str(as_dict(message).get("value")) if isinstance(message, dict) else as_str(message)
    return tuple(file_touch(action, uri_path(link)) for link in _EMPTY_LINK.findall(said))


def _tool_line(kind: str, part: dict[str, Any]) -> str:
    if kind in _EDITS:
        return summarise_tool_call("edit", {"path": Path(uri_path(part.get("uri")).replace("\\", "/")).name})
    name = as_str(part.get("toolId")) or "tool"
    terminal = as_dict(part.get("toolSpecificData"))
    if terminal.get("kind") == "terminal":  # the command line, as the terminal ran it
        command = as_str(as_dict(terminal.get("commandLine")).get("original")) or as_str(terminal.get("command"))
        if command:
            return summarise_tool_call(name, {"command": command})
    message = part.get("pastTenseMessage") or part.get("invocationMessage")
    said = as_str(as_dict(message).get("value")) if isinstance(message, dict) else as_str(message)
    said = _EMPTY_LINK.sub(lambda found: Path(uri_path(found.group(1)).replace(chr(92), "/")).name, said)
    return summarise_tool_call(name, {"description": said} if said else {})


def _project(file: Path) -> str | None:
    if file.parent.name != SESSIONS:
        return None  # a window with no folder open
    return workspace_folder(file.parent.parent)
