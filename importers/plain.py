"""The plain pastchats format: `{"conversations": [...]}` or JSON Lines, one conversation per line.

Only `id` and each message's `role` and `text` are required. Missing times fall back to the
neighbouring times (message times, then the file's modification time), and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.dataclasses import dataclass

from importers._common import Unusable, check_chat_times, message_time, title_from
from importers._files import open_regular
from importers._json import BrokenJson, Malformed, iter_json_values
from importers.base import Importer, ImportReport, SourceError
from storage.models import Conversation, Message, Role, Touch, UtcDatetime
from storage.safe_text import id_problem

ROLE_ALIASES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
}


def _normal_id(value: object) -> object:
    """A number as text, a string stripped of surrounding whitespace; ValueError when it cannot be typed
    back (`importers._safe` checks every format's ids again). Anything else is left to the schema."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        return value
    stripped = value.strip()
    problem = id_problem(stripped)
    if problem is not None:
        raise ValueError(problem)
    return stripped


# A slotted dataclass, as `Message` is: a long chat's read messages are held beside its parsed JSON.
@dataclass(slots=True, kw_only=True, config=ConfigDict(extra="ignore"))
class _PlainMessage:
    role: Role
    text: str
    id: Annotated[str | None, Field(min_length=1)] = None
    created_at: UtcDatetime | None = None
    touches: tuple[Touch, ...] = ()

    @field_validator("role", mode="before")
    @classmethod
    def _role_alias(cls, value: object) -> object:
        if isinstance(value, str):
            return ROLE_ALIASES.get(value.strip().lower(), value)
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: object) -> object:
        return _normal_id(value)


class _PlainConversation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    title: str | None = None
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None
    project: str | None = None
    url: str | None = None
    source: str | None = Field(default=None, min_length=1)
    messages: list[_PlainMessage]

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: object) -> object:
        return _normal_id(value)


def describe_validation_error(error: ValidationError) -> str:
    """`messages[2].role: Input should be 'user', ...` — the field path a user can find in the file."""
    problems = []
    for item in error.errors()[:3]:
        path = ""
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        problems.append(f"{path or 'conversation'}: {item['msg']}")
    more = len(error.errors()) - 3
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def _build(raw: _PlainConversation, fallback_time: datetime, report: ImportReport) -> Conversation:
    check_chat_times(raw.created_at, raw.updated_at)
    moments = [message_time(m.created_at, report) for m in raw.messages]
    times = [t for t in moments if t is not None]
    created = raw.created_at or (min(times) if times else None) or raw.updated_at
    updated = raw.updated_at or (max(times) if times else None) or created
    if created is None or updated is None:
        report.note("some conversations had no times; the file's modification time was used")
        created = created or message_time(fallback_time, report) or datetime.now(UTC)
        updated = updated or created
    if updated < created:
        updated = created
    # Each read message is let go as its model is made: a long chat is never held twice over.
    messages = []
    for i, m in enumerate(raw.messages):
        messages.append(
            Message(id=m.id or f"msg-{i}", index=i, role=m.role, text=m.text, created_at=moments[i], touches=m.touches)
        )
        raw.messages[i] = None  # type: ignore[call-overload]
    return Conversation(
        id=raw.id,
        source=raw.source or "pastchats",
        title=(raw.title or "").strip() or title_from(messages),
        created_at=created,
        updated_at=updated,
        project=raw.project or None,
        url=raw.url or None,
        messages=messages,
    )


# A first line longer than this is not one JSON Lines record worth holding whole: stream the document.
_LINE_PROBE = 8 * 1024**2


def _records(path: Path, report: ImportReport) -> Iterator[tuple[str, Any]]:
    """(where, raw object) pairs from a JSON document or a JSON Lines stream, read incrementally.

    A JSON Lines file is read line by line, so a broken line costs only itself. A document (pretty-
    printed, or one huge line) is streamed record by record: a file cut short keeps every complete one.
    Unreadable records come as (where, Malformed).
    """
    try:
        handle = open_regular(path)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with handle:
        first, second = handle.readline(_LINE_PROBE), handle.readline(_LINE_PROBE)
        handle.seek(0)
        lines = _is_json_lines(first, second)
        del first, second  # up to 16 MB, not held while the records are read
        if lines:
            yield from _line_records(path, handle)
            return
        count = 0
        try:
            for count, item in enumerate(iter_json_values(handle, "conversations", report=report), start=1):
                yield f"{path.name}, conversation #{count}", item
        except BrokenJson as exc:
            if count == 0:
                raise SourceError(f"{path.name} is neither JSON nor JSON Lines: {exc}") from None
            reason = f"{exc}; the conversations before it were read"
            yield f"{path.name}, after conversation #{count}", Malformed(reason)
        if count == 0:
            raise SourceError(f'{path.name}: expected {{"conversations": [...]}} or JSON Lines')


def _is_json_lines(first: bytes, second: bytes) -> bool:
    """JSON Lines: the first line is a whole JSON object by itself, or (when the first record is the
    broken one) the second line is, which a pretty-printed document's second line never is."""
    return first.endswith(b"\n") and (_is_object(first) or _is_object(second))


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.decode("utf-8", "replace").lstrip("\ufeff")), dict)
    except (ValueError, RecursionError):
        return False


def _line_records(path: Path, handle: IO[bytes]) -> Iterator[tuple[str, Any]]:
    number = 0
    for raw in handle:  # counted by hand: `enumerate` would keep the last line alive beside its chat
        number += 1
        if not raw.strip():
            continue
        where = f"{path.name}, line {number}"
        try:
            value = json.loads(raw.decode("utf-8", "replace").lstrip("\ufeff"))
            del raw  # a chat's line (61 MB for a million messages) is not held while its chat is imported
        except json.JSONDecodeError as exc:
            yield where, Malformed(f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:
            yield where, Malformed("nested too deeply to read")
            continue
        if isinstance(value, dict) and isinstance(value.get("conversations"), list):
            for i, item in enumerate(value["conversations"], start=1):
                yield f"{where}, conversation #{i}", item
        else:
            yield where, value


class PlainImporter(Importer):
    name = "plain"

    def detect(self, path: Path) -> bool:
        if not path.is_file() or path.suffix.lower() not in {".json", ".jsonl", ".ndjson"}:
            return False
        try:
            with open_regular(path) as handle:
                head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        except OSError:
            return False
        if head.startswith(('{"conversations"', '{ "conversations"')):
            return True
        first_line = head.split("\n", 1)[0]
        return first_line.startswith("{") and '"messages"' in head and '"role"' in head and '"mapping"' not in head

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        fallback_time = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        seen: set[str] = set()
        for where, item in _records(path, report):
            if isinstance(item, Malformed):
                report.skip(where, item.reason)
                continue
            if isinstance(item, dict) and isinstance(item.get("id"), str | int):
                where = f"{where} (id {str(item['id'])!r})"
            if not isinstance(item, dict):
                report.skip(where, f"expected a conversation object, got {type(item).__name__}")
                continue
            try:
                raw = _PlainConversation.model_validate(item)
                item.clear()  # the parsed JSON, which the reader above still refers to: not held beside the models
                conversation = _build(raw, fallback_time, report)
            except ValidationError as exc:
                report.skip(where, describe_validation_error(exc))
                continue
            except Unusable as exc:
                report.skip(where, str(exc))
                continue
            if conversation.id in seen:
                report.skip(where, "the same id appears earlier in this file; the first one was kept")
                continue
            seen.add(conversation.id)
            yield conversation
