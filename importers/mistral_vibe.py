"""Mistral Vibe sessions: `<vibe home>/logs/session/`, the vibe home being `$VIBE_HOME`, else `~/.vibe`
(on every OS), unless `$VIBE_SESSION_LOGGING__SAVE_DIR` or `save_dir` under `[session_logging]` in
`<vibe home>/config.toml` names another folder (the default one is still searched: sessions written
before the change stay there).

Since 2.0 each session is a folder `session_<YYYYmmdd_HHMMSS>_<first 8 of its id>/` holding
`messages.jsonl`, the messages as the model is sent them, one `{role, content, ...}` a line, appended
as the session goes on (the system prompt left out, no times), and `meta.json`, rewritten after each
turn: `session_id`, `start_time` and `end_time` (ISO 8601), `environment.working_directory`, `title`
(the user's `/rename`, an automatic one, or the start of the first prompt) and, for a session that
continues another after a compaction, `parent_session_id`. Before 2.0 a session was one file,
`session_<time>_<id>.json`, `{"metadata": {...}, "messages": [...]}` with the system prompt first
and a local start time; 2.0 moves each into a folder of the file's name, so that name is the chat's
id. A subagent's trace lies in `agents/` inside its parent's folder: its own work, not the chat.

What Vibe writes in the user's place is left out: messages it marks `injected` (reminders of the
mode, warnings, hook output, the context carried over a compaction), and, from versions that did
not mark them, the compaction summary (after Vibe's own lead-in, or ending with the last request it
repeats) and its `<vibe_warning>` notices. Reasoning (`reasoning_content`) is left out.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
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
    expand_home,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import file_time, iter_jsonl, read_head, read_regular
from importers._sessions import SessionFileImporter
from importers._touches import function_call_touches
from importers.base import ImportReport
from storage.models import Conversation

MESSAGES = "messages.jsonl"
METADATA = "meta.json"
# `<prefix>_<YYYYmmdd>_<HHMMSS>_<first 8 of the session id>`: a session's folder, or its file before 2.0.
_SESSION_NAME = re.compile(r"\A.+_\d{8}_\d{6}_[0-9a-f-]{1,8}\Z")
# How Vibe itself wraps a notice it adds for the model (a warning, a mode's reminder).
_NOTICE = re.compile(r"\A\s*<vibe_warning>.*</vibe_warning>\s*\Z", re.DOTALL)
# The lead-in of a compaction summary (2.10 to 2.12), and the request 1.x repeated after one.
_SUMMARY_LEAD = "Another language model started to solve this problem and produced a summary of its work"
_SUMMARY_TAIL = re.compile(r"\n\nLast request from user was: ", re.DOTALL)
# A tool's output that is Vibe's note of an error or of the user stopping it, in its tag.
_TOOL_ERROR = re.compile(r"\A\s*<(tool_error|user_cancellation)>(.*)</\1>\s*\Z", re.DOTALL)


def vibe_home(env: Mapping[str, str], home: Path) -> Path:
    return env_folder(env, "VIBE_HOME", home, ".vibe")


def _configured_folder(env: Mapping[str, str], home: Path, vibe: Path) -> Path | None:
    """The sessions' folder the user set: the variable, else `save_dir` in Vibe's own config."""
    configured = env.get("VIBE_SESSION_LOGGING__SAVE_DIR", "").strip()
    if not configured:
        try:
            config = tomllib.loads(read_regular(vibe / "config.toml").decode("utf-8", "replace"))
        except (OSError, ValueError):
            return None
        configured = as_str(as_dict(config.get("session_logging")).get("save_dir")).strip()
    return expand_home(configured, home) if configured else None


class MistralVibeImporter(SessionFileImporter):
    name = "mistral-vibe"
    detect_depth = 4
    none_found = "no Mistral Vibe sessions (logs/session/session_*/messages.jsonl) under {path}"
    variables: ClassVar[Mapping[str, str]] = {
        "VIBE_HOME": "Mistral Vibe's folder (default ~/.vibe), whose logs/session/ holds the sessions",
        "VIBE_SESSION_LOGGING__SAVE_DIR": "Mistral Vibe's sessions folder (default ~/.vibe/logs/session)",
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        vibe = vibe_home(env, home)
        default = vibe / "logs" / "session"
        configured = _configured_folder(env, home, vibe)
        return [configured, default] if configured is not None and configured != default else [default]

    def session_files(self, folder: Path) -> list[Path]:
        root = folder / "logs" / "session" if (folder / "logs" / "session").is_dir() else folder
        found = [*root.glob(f"*/{MESSAGES}"), *root.glob("*.json")]
        return sorted(file for file in found if file.is_file() and _is_session_name(file))

    def context_files(self, session: Path) -> list[Path]:
        """The session's `meta.json` (its title, folder and times), kept with the session's copy."""
        metadata = session.parent / METADATA
        return [metadata] if session.name == MESSAGES and metadata.is_file() else []

    def is_session(self, file: Path) -> bool:
        return _looks_like_session(file)

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        return _convert(file, report, unknown)


def _is_session_name(file: Path) -> bool:
    """A session's messages in a folder named as Vibe names them, or a session file of 1.x."""
    if file.name == MESSAGES:
        return bool(_SESSION_NAME.match(file.parent.name)) and file.parent.parent.name != "agents"
    return file.suffix == ".json" and bool(_SESSION_NAME.match(file.stem))


def _looks_like_session(path: Path) -> bool:
    """Vibe's messages beside a `meta.json` naming a session, or a 1.x file whose metadata does."""
    if not _is_session_name(path):
        return False
    if path.name == MESSAGES:
        return '"session_id"' in read_head(path.parent / METADATA, 4096).replace(" ", "")
    head = read_head(path, 4096).replace(" ", "").replace("\n", "")
    return head.startswith('{"metadata":{') and '"session_id"' in head


def _load_json(file: Path) -> dict[str, Any]:
    return as_dict(json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff")))


def _convert(file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    if file.name == MESSAGES:
        try:
            metadata = _load_json(file.parent / METADATA)
        except (OSError, ValueError, RecursionError):
            metadata = {}
            report.note("some Mistral Vibe sessions had no readable meta.json: their title and folder are unknown")
        messages = [value for _, value in iter_jsonl(file, report)]
        session = file.parent.name
    else:
        whole = _load_json(file)
        metadata, messages, session = as_dict(whole.get("metadata")), as_list(whole.get("messages")), file.stem
    turns: list[Turn] = []
    for number, message in enumerate(messages, start=1):
        turns.extend(_turns(str(number), as_dict(message), unknown))
    # The folder's name, not the session id: Vibe 2.0 moved each 1.x session file into a folder of
    # the file's name, so the chat stays one chat; a session resumed is written to its own folder.
    return build_conversation(
        id=f"mistral-vibe:{session}",
        source="mistral-vibe",
        turns=turns,
        report=report,
        title=as_str(metadata.get("title")),
        created_at=parse_time(metadata.get("start_time")),
        updated_at=parse_time(metadata.get("end_time")),
        project=as_str(as_dict(metadata.get("environment")).get("working_directory")) or None,
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _turns(key: str, message: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    role = as_str(message.get("role"))
    text = _text(message.get("content"))
    if role == "user":
        if message.get("injected") or _written_by_vibe(text):
            return []
        images = [f"[image {as_str(as_dict(image).get('alias'))}]" for image in as_list(message.get("images"))]
        return [Turn(as_id(message.get("message_id")) or key, "user", "\n\n".join([text, *images]).strip())]
    if role == "assistant":
        lines = [text]
        for call in as_list(message.get("tool_calls")):
            function = as_dict(as_dict(call).get("function"))
            lines.append(summarise_tool_call(as_str(function.get("name")), as_str(function.get("arguments"))))
        touched = function_call_touches(message.get("tool_calls"))
        return [
            Turn(
                as_id(message.get("message_id")) or key, "assistant", "\n\n".join(filter(None, lines)), touches=touched
            )
        ]
    if role == "tool":
        error = _TOOL_ERROR.match(text)
        output = error.group(2) if error else text
        return [Turn(f"{key}:tool", "tool", summarise_tool_result(output, error=bool(error)))]
    if role != "system":
        count_unknown(unknown, role, "messages", "role")
    return []


def _written_by_vibe(text: str) -> bool:
    """A user message Vibe wrote itself in a version that did not mark it: a compaction summary or a notice."""
    return text.startswith(_SUMMARY_LEAD) or bool(_SUMMARY_TAIL.search(text)) or bool(_NOTICE.match(text))


def _text(content: object) -> str:
    """A message's text: a string, or the text of its parts (how Vibe itself reads a list)."""
    if isinstance(content, str):
        return content
    return "\n".join(as_str(as_dict(part).get("text")) for part in as_list(content))
