"""Continue sessions (the VS Code and JetBrains extensions and the `cn` CLI alike):
`<continue dir>/sessions/<session id>.json`, the dir being `$CONTINUE_GLOBAL_DIR`, else `~/.continue`
(on every OS), with `sessions.json` beside them listing each session's title, creation time and
workspace, as Continue's history view shows them.

A session is `{sessionId, title, workspaceDirectory, history: [{message, contextItems, ...}]}`.
User and assistant messages are the conversation (content is text or a list of text and image
parts); `thinking` messages are the model's reasoning and are left out, as are the files and
snippets attached as context (`contextItems`); tool calls become one short line, `tool` messages
their output. Messages carry no times: the chat is dated by `sessions.json`'s `dateCreated`, the
one date Continue shows (the file's last change when the session is not listed); a listed session
whose file is gone is named in the report. Sessions from
before Continue 0.8 (a `timeline`, listed with `session_id`) are not read: Continue no longer
shows them either.
"""

from __future__ import annotations

import json
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
    env_folder,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, one_read_per_folder, per_folder, read_head, read_regular
from importers._touches import VERBS, touches_in
from importers._vscode import file_uri_path
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Action, Conversation

INDEX = "sessions.json"
# The titles Continue gives a session until it names one (the extensions', the CLI's).
_PLACEHOLDER_TITLES = {"New Session", "Untitled Session"}


class ContinueImporter(AgentLogImporter):
    name = "continue"
    variables: ClassVar[Mapping[str, str]] = {
        "CONTINUE_GLOBAL_DIR": "Continue's global folder (default ~/.continue), whose sessions/ holds the sessions"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [env_folder(env, "CONTINUE_GLOBAL_DIR", home, ".continue") / "sessions"]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "sessions" if (folder / "sessions").is_dir() else folder
        return sorted(f for f in root.glob("*.json") if f.name != INDEX and f.is_file())

    def context_files(self, session: Path) -> list[Path]:
        index = session.parent / INDEX
        return [index] if index.is_file() else []

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_session(path)
        return path.is_dir() and any(_looks_like_session(f) for f in self.session_files(path)[:50])

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(f"no Continue sessions (sessions/*.json) under {path}")
        unknown: UnknownCounts = {}

        def convert(file: Path) -> Conversation:
            index = per_folder("continue index", file.parent, lambda folder: _index(folder / INDEX))
            return _convert(file, index, report, unknown)

        with one_read_per_folder():
            yield from convert_each(path, files, report, convert, "session")
        if path.is_dir():
            _note_missing(files[0].parent, {file.stem for file in files}, report)
        note_unknown(report, unknown)


def _note_missing(folder: Path, present: set[str], report: ImportReport) -> None:
    """Say which sessions `sessions.json` lists whose files are gone: nothing is silently missing."""
    missing = sorted(set(_index(folder / INDEX)) - present)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        report.note(f"{INDEX} lists {len(missing)} session(s) whose file is missing, not imported: {shown}")


def _looks_like_session(path: Path) -> bool:
    if path.suffix != ".json" or path.name == INDEX:
        return False
    head = read_head(path, 4096)
    return '"sessionId"' in head and '"history"' in head and '"workspaceDirectory"' in head


def _index(file: Path) -> dict[str, dict[str, Any]]:
    """sessionId → its entry in `sessions.json` (title, dateCreated, workspaceDirectory)."""
    try:
        entries = json.loads(read_regular(file).decode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return {as_id(as_dict(e).get("sessionId")): as_dict(e) for e in as_list(entries) if as_dict(e).get("sessionId")}


def _convert(
    file: Path, index: dict[str, dict[str, Any]], report: ImportReport, unknown: UnknownCounts
) -> Conversation:
    try:
        session = json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff"))
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"not valid JSON ({exc})") from None
    session = as_dict(session)
    if "timeline" in as_dict(session.get("history")):
        raise Unusable("a session from before Continue 0.8 (a timeline): Continue no longer shows these")
    session_id = as_id(session.get("sessionId")) or file.stem
    listed = index.get(session_id, {})
    turns: list[Turn] = []
    for number, item in enumerate(as_list(session.get("history"))):
        turns.extend(_turns(f"{session_id}#{number}", as_dict(as_dict(item).get("message")), unknown))
    title = as_str(session.get("title")) or as_str(listed.get("title"))
    return build_conversation(
        id=f"continue:{session_id}",
        source="continue",
        turns=turns,
        report=report,
        title="" if title.strip() in _PLACEHOLDER_TITLES else title,
        created_at=parse_time(listed.get("dateCreated")),
        project=file_uri_path(as_str(session.get("workspaceDirectory")) or as_str(listed.get("workspaceDirectory")))
        or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


# Continue's own names for its file and terminal tools, beside the ones agents share.
_VERBS: Mapping[str, Action] = {
    **VERBS,
    "create_new_file": "created",
    "edit_existing_file": "edited",
    "single_find_and_replace": "edited",
    "run_terminal_command": "ran",
}


def _turns(key: str, message: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    role = as_str(message.get("role"))
    if role == "user":
        return [Turn(key, "user", _content(message.get("content")))]
    if role == "assistant":
        calls = [as_dict(as_dict(call).get("function")) for call in as_list(message.get("toolCalls"))]
        lines = [_content(message.get("content"))]
        lines += [summarise_tool_call(as_str(c.get("name")), c.get("arguments")) for c in calls if c.get("name")]
        touched = touches_in(((as_str(c.get("name")), c.get("arguments")) for c in calls), _VERBS)
        return [Turn(key, "assistant", "\n\n".join(line for line in lines if line.strip()), touches=touched)]
    if role == "tool":
        return [Turn(key, "tool", summarise_tool_result(_content(message.get("content"))))]
    if role not in {"thinking", "system"}:
        count_unknown(unknown, role, "messages", "role")
    return []


def _content(content: object) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in as_list(content):
        part = as_dict(part)
        if as_str(part.get("type")) == "text":
            texts.append(as_str(part.get("text")))
        elif as_str(part.get("type")) == "imageUrl":
            texts.append("[image]")
    return "\n".join(text for text in texts if text)
