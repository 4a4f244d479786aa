"""What an agent's tool call touched: the files it read, edited or created, and the command it ran.

One reading of every agent's tool calls (`touches_of(name, arguments)`): the tool's name says what it
does (`VERBS`, the names the agents share: Claude Code's `Edit`, Gemini CLI's `replace`, Cline's
`replace_in_file`, OpenCode's `edit` ...), its arguments say on what (`PATH_KEYS`, `COMMAND_KEYS`, a
patch's file headers). An agent whose names differ passes its own verbs (`{**VERBS, ...}`), kept in
its importer. Paths are kept as the agent wrote them; `build_conversation` resolves a relative one
against the chat's folder (`importers._safe.resolved`).

Everything kept passes `shorten` (a command line can hold a secret; it is redacted as the tool
summaries are), and nothing here raises: a call it cannot read touched nothing.
"""

from __future__ import annotations

import contextlib
import json
import ntpath
import posixpath
import re
from collections.abc import Iterable, Mapping

from importers._common import as_dict, as_list, as_str, shorten
from importers._safe import is_absolute
from storage.models import Action, Touch

# Tool names (case-folded) and what calling them does to their path or command.
VERBS: Mapping[str, Action] = {
    **dict.fromkeys(
        (
            "read",
            "read_file",
            "readfile",
            "view",
            "view_file",
            "open_file",
            "notebookread",
            "read_many_files",
            "read_files",
            "readfiles",
            "cat",
        ),
        "read",
    ),
    **dict.fromkeys(
        (
            "edit",
            "multiedit",
            "multi_edit",
            "edit_file",
            "editfile",
            "replace",
            "replace_in_file",
            "apply_diff",
            "search_replace",
            "search_and_replace",
            "str_replace",
            "insert",
            "insert_content",
            "notebookedit",
            "edit_notebook",
            "apply_patch",
            "patch",
            "applypatch",
            "insert_edit_into_file",
            "replace_string_in_file",
            "multi_replace_string_in_file",
            "delete_file",
        ),
        "edited",
    ),
    **dict.fromkeys(("write", "write_file", "write_to_file", "create", "create_file", "writefile"), "created"),
    **dict.fromkeys(
        (
            "bash",
            "shell",
            "shell_command",
            "exec_command",
            "local_shell",
            "local_shell_call",
            "run_shell_command",
            "execute_command",
            "run_terminal_cmd",
            "run_in_terminal",
            "run_command",
            "terminal",
            "command",
            "powershell",
            "execute_bash",
            "cmd_run",
        ),
        "ran",
    ),
}
# Tools whose `command` argument says what they do to their `path` (Anthropic's text editor tool, as
# OpenHands and others call it).
_EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor"})
_EDITOR_COMMANDS: Mapping[str, Action] = {"view": "read", "create": "created", "write": "created"}

PATH_KEYS = (
    "file_path", "filePath", "absolute_path", "notebook_path", "target_file", "targetFile", "path", "file",
    "filepath", "filename", "uri", "relativeWorkspacePath",
)  # fmt: skip
LIST_KEYS = ("paths", "file_paths", "filePaths", "files")
COMMAND_KEYS = ("command", "cmd", "commandLine")
PATCH_KEYS = ("input", "patch", "patchText", "patch_text", "diff")
# The folder a call ran in, against which its relative paths are read.
FOLDER_KEYS = ("workdir", "cwd", "working_directory", "dir_path", "directory")

# `*** Update File: src/a.py` (Codex's and OpenCode's patches), `+++ b/src/a.py` (a unified diff).
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$", re.MULTILINE)
_GLOB = re.compile(r"[*?\[]")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell", "cmd", "cmd.exe", "powershell.exe"})
MAX_PATH_CHARS = 400
MAX_COMMAND_CHARS = 200


def touches_of(name: str, arguments: object, verbs: Mapping[str, Action] = VERBS) -> tuple[Touch, ...]:
    """What a call to tool `name` with `arguments` (a dict, or its JSON) touched; () when nothing known."""
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    key = name.strip().casefold().replace("-", "_")
    base = key.rsplit(".", 1)[-1].rsplit("__", 1)[-1]  # an MCP server's tool: `developer__shell`, `fs.read_file`
    if not isinstance(arguments, dict):
        text = as_str(arguments)
        return _patched(text) if base in {"apply_patch", "patch", "applypatch"} else ()
    if base in _EDITOR_TOOLS:
        action: Action | None = _EDITOR_COMMANDS.get(as_str(arguments.get("command")).strip(), "edited")
    else:
        action = verbs.get(key) or verbs.get(base)
    if action is None:
        return ()
    if action == "ran":
        return _ran(arguments)
    patched = next((_patched(as_str(arguments.get(k))) for k in PATCH_KEYS if as_str(arguments.get(k))), ())
    if patched:
        return patched
    folder = next((as_str(arguments.get(k)).strip() for k in FOLDER_KEYS if as_str(arguments.get(k)).strip()), "")
    return tuple(Touch(action, _path(path, folder)) for path in _paths(arguments) if path)


def touches_in(calls: Iterable[tuple[str, object]], verbs: Mapping[str, Action] = VERBS) -> tuple[Touch, ...]:
    """What each of these (name, arguments) calls touched, in order."""
    return tuple(touch for name, arguments in calls for touch in touches_of(name, arguments, verbs))


def ran(command: str) -> tuple[Touch, ...]:
    """A command line run (a shell tool's, or one an agent shows as run): () when blank."""
    line = shorten(command, MAX_COMMAND_CHARS)
    patched = _patched(command) if "*** Begin Patch" in command else ()  # Codex's apply_patch, run as a command
    return patched or ((Touch("ran", line),) if line else ())


def _ran(arguments: dict[str, object]) -> tuple[Touch, ...]:
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, list):  # ["bash", "-lc", "pytest -q"] as Codex runs it: the script is the command
            words = [as_str(word) for word in value]
            if (
                len(words) >= 3
                and words[0].rsplit("/", 1)[-1].casefold() in _SHELLS
                and words[1].startswith(("-", "/"))
            ):
                value = words[-1]
            else:
                value = " ".join(words)
        if isinstance(value, str) and value.strip():
            return ran(value)
    return ()


def _paths(arguments: dict[str, object]) -> list[str]:
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, dict):  # a VS Code URI ({"path": "/src/a.py", "scheme": "file"})
            value = value.get("fsPath") or value.get("path")
        if isinstance(value, str) and value.strip():
            return [value]
    for key in LIST_KEYS:
        values = [as_str(v) or as_str(as_dict(v).get("path")) for v in as_list(arguments.get(key))]
        if any(values):
            return [value for value in values if not _GLOB.search(value)]  # a pattern names no one file
    return []


def _patched(patch: str) -> tuple[Touch, ...]:
    """The files a patch's headers name: added (created), updated, deleted or moved (edited)."""
    touches: list[Touch] = []
    for match in _PATCH_FILE.finditer(patch):
        kind, path, moved = match.groups()
        touches.append(Touch("created" if kind == "Add" else "edited", _path(path or moved, "")))
    if not touches:
        touches = [Touch("edited", _path(path, "")) for path in _DIFF_FILE.findall(patch) if path != "/dev/null"]
    return tuple(dict.fromkeys(touch for touch in touches if touch.target))


def file_touch(action: Action, path: str, folder: str = "") -> Touch:
    """A file an agent says it touched in words of its own (aider's "Applied edit to x.py")."""
    return Touch(action, _path(path, folder))


def _path(path: str, folder: str) -> str:
    path = path.strip()
    if path.startswith("file://"):
        path = path.removeprefix("file://")
    if folder and not is_absolute(path):
        path = (ntpath if "\\" in folder else posixpath).join(folder, path)
    return shorten(path, MAX_PATH_CHARS) if path else ""


def tool_use_touches(content: object, verbs: Mapping[str, Action] = VERBS) -> tuple[Touch, ...]:
    """What the `tool_use` blocks of a message's content touched (Anthropic's message shape, as Claude
    Code, Claude.ai, Cline's SDK and Cursor's agent write it)."""
    blocks = [as_dict(block) for block in as_list(content)]
    calls = [
        (as_str(b.get("name")), b.get("input")) for b in blocks if b.get("type") in {"tool_use", "server_tool_use"}
    ]
    return touches_in(calls, verbs)


def function_call_touches(calls: object, verbs: Mapping[str, Action] = VERBS) -> tuple[Touch, ...]:
    """What a message's `tool_calls` touched, in the OpenAI shape (`{"function": {"name", "arguments"}}`)
    that Kimi, Mistral Vibe and others keep."""
    functions = [as_dict(as_dict(call).get("function")) for call in as_list(calls)]
    return touches_in(((as_str(f.get("name")), f.get("arguments")) for f in functions), verbs)
