"""What every importer's conversations pass through before the store sees them (`registry.read`).

- Ids are normalised or rejected with a reason: surrounding whitespace is stripped; an id left empty,
  or holding a line break, a control or format character (`storage.safe_text.id_problem`), skips
  its chat with that reason in the report, since no one could type it back to read or delete it.
- Text is cleaned (`storage.safe_text.clean`): no control character, escape sequence or bidi control
  reaches the store; lone surrogates become U+FFFD, and the report says so.
- A project is spelt one way per folder (`one_project`): agents on Windows record one folder as
  `c:\\Users\\…`, `C:\\Users\\…`, `c:/Users/…` or `/c:/Users/…` (from a `file://` URI), and each
  would otherwise be a project of its own. The files a chat's tool calls touched are spelt the same
  way, a relative path read against the chat's folder (`resolved`): one file, one spelling, whichever
  agent touched it.

Which format may replace a stored chat is the store's to decide (`registry.foreign_prefixes`).
"""

from __future__ import annotations

import dataclasses
import ntpath
import posixpath
import re
from collections.abc import Iterator

from pydantic import ValidationError

from importers._common import Unusable
from importers.base import ImportReport
from storage.models import Conversation, Message, Touch
from storage.safe_text import clean, has_lone_surrogate, id_problem

SURROGATES_NOTE = "some text held invalid characters (lone surrogates, as `\\ud800` in JSON); each became U+FFFD"


def safe_conversations(conversations: Iterator[Conversation], report: ImportReport) -> Iterator[Conversation]:
    for conversation in conversations:
        try:
            yield safe_conversation(conversation, report)
        except Unusable as exc:
            report.skip(f"chat id {conversation.id!r}", str(exc))


def checked_id(value: str, what: str = "") -> str:
    """`value` stripped, or Unusable naming what is wrong with it."""
    stripped = value.strip()
    problem = id_problem(stripped)
    if problem is not None:
        raise Unusable(f"{what}{problem}")
    return stripped


def safe_conversation(conversation: Conversation, report: ImportReport) -> Conversation:
    """`conversation` itself when it is clean (almost always), else a clean copy; Unusable when an id
    cannot be made one."""
    chat_id = checked_id(conversation.id)
    changed = chat_id != conversation.id
    project = one_project(_cleaned(conversation.project, report)) if conversation.project else None
    folder = project if project and is_absolute(project) else None
    messages: list[Message] = []
    for message in conversation.messages:
        message_id = checked_id(message.id, f"message #{message.index + 1}: ")
        text = _cleaned(message.text, report)
        touches = _touched(message.touches, folder, report)
        if message_id != message.id or text != message.text or touches != message.touches:
            changed = True
            message = dataclasses.replace(message, id=message_id, text=text, touches=touches)
        messages.append(message)
    source, title = _cleaned(conversation.source, report), _cleaned(conversation.title, report)
    url = _cleaned(conversation.url, report) if conversation.url else None
    if not changed and (source, title, project, url) == (
        conversation.source,
        conversation.title,
        conversation.project,
        conversation.url,
    ):
        return conversation
    try:
        return Conversation(
            id=chat_id,
            source=source,
            title=title,
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
            project=project or None,
            url=url or None,
            messages=messages,
        )
    except ValidationError as exc:  # two message ids made equal by stripping, a source cleaned to nothing
        error = exc.errors()[0]
        raise Unusable(f"{'.'.join(map(str, error['loc'])) or 'chat'}: {error['msg']}") from None


_DRIVE = re.compile(r"^/?([A-Za-z]):(?=[\\/]|$)")
_SEPARATORS = re.compile(r"[\\/]+")


def one_project(project: str) -> str:
    """The one spelling of a project folder: a Windows path with its drive letter upper-cased and
    backslashes throughout (`C:\\Users\\ana\\shop`); any path without a trailing separator."""
    drive = _DRIVE.match(project)
    if drive is None:
        return project.rstrip("/") or project
    parts = [part for part in _SEPARATORS.split(project[drive.end() :]) if part]
    return f"{drive.group(1).upper()}:\\" + "\\".join(parts)


_WINDOWS_ROOT = re.compile(r"^/?[A-Za-z]:(?:[\\/]|$)|^\\\\")


def is_absolute(path: str) -> bool:
    """Whether a path names its folder from a root (`/`, `~`, a drive, a UNC share), on any system."""
    return path.startswith(("/", "~")) or bool(_WINDOWS_ROOT.match(path))


def resolved(touch: Touch, folder: str | None) -> Touch:
    """`touch` with its path read against the chat's `folder` when relative, without `./` or `..`, and
    spelt as projects are (`one_project`); a command as it is."""
    if touch.action == "ran":
        return touch
    path = touch.target
    windows = "\\" in path or bool(_WINDOWS_ROOT.match(path)) or bool(folder and _WINDOWS_ROOT.match(folder))
    flavour = ntpath if windows else posixpath
    if folder and not is_absolute(path):
        path = flavour.join(folder, path)
    if is_absolute(path) and not path.startswith("~"):
        path = flavour.normpath(path[1:] if windows and path.startswith("/") else path)
    path = one_project(path)
    return touch if path == touch.target else Touch(touch.action, path)


def _touched(touches: tuple[Touch, ...], folder: str | None, report: ImportReport) -> tuple[Touch, ...]:
    if not touches:
        return touches
    out = tuple(dict.fromkeys(resolved(Touch(t.action, _cleaned(t.target, report)), folder) for t in touches))
    return touches if out == touches else out


def _cleaned(text: str, report: ImportReport) -> str:
    cleaned = clean(text)
    if cleaned != text and has_lone_surrogate(text):
        report.note(SURROGATES_NOTE)
    return cleaned
