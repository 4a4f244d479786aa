"""The plain pastchats format: `{"conversations": [...]}` or JSON Lines, one conversation per line.

Only `id` and each message's `role` and `text` are required. Missing times fall back to the
neighbouring times (message times, then the file's modification time), and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from importers.base import ImportReport, SourceError
from storage.models import Conversation, Message, Role, UtcDatetime

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


class _PlainMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, min_length=1)
    role: Role
    text: str
    created_at: UtcDatetime | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _role_alias(cls, value: object) -> object:
        if isinstance(value, str):
            return ROLE_ALIASES.get(value.strip().lower(), value)
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id_from_number(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


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
    def _id_from_number(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def title_from(messages: list[Message]) -> str:
    """A title for an untitled chat: the start of its first user message."""
    for message in messages:
        if message.role == "user" and message.text.strip():
            words = " ".join(message.text.split())
            return words if len(words) <= 80 else words[:77].rstrip() + "..."
    return "Untitled conversation"


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
    times = [m.created_at for m in raw.messages if m.created_at is not None]
    created = raw.created_at or (min(times) if times else None) or raw.updated_at
    updated = raw.updated_at or (max(times) if times else None) or created
    if created is None or updated is None:
        report.note("some conversations had no times; the file's modification time was used")
        created = created or fallback_time
        updated = updated or created
    if updated < created:
        updated = created
    messages = [
        Message(id=m.id or f"msg-{i}", index=i, role=m.role, text=m.text, created_at=m.created_at)
        for i, m in enumerate(raw.messages)
    ]
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


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, raw object) pairs from a JSON document or a JSON Lines stream."""
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
        lines = text.splitlines()
        if len(lines) <= 1:
            raise SourceError(f"{path.name} is neither JSON nor JSON Lines") from None
    if document is not None:
        if isinstance(document, dict) and isinstance(document.get("conversations"), list):
            items = document["conversations"]
        elif isinstance(document, list):
            items = document
        elif isinstance(document, dict) and "messages" in document:
            items = [document]
        else:
            raise SourceError(f'{path.name}: expected {{"conversations": [...]}} or JSON Lines')
        for i, item in enumerate(items):
            yield f"{path.name}, conversation #{i + 1}", item
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield f"{path.name}, line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            yield f"{path.name}, line {number}", exc


class PlainImporter:
    name = "plain"
    description = 'pastchats plain JSON ({"conversations": [...]}) or JSON Lines'

    def detect(self, path: Path) -> bool:
        if not path.is_file() or path.suffix.lower() not in {".json", ".jsonl", ".ndjson"}:
            return False
        try:
            with path.open("rb") as handle:
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
        for where, item in _records(path):
            if isinstance(item, json.JSONDecodeError):
                report.skip(where, f"not valid JSON ({item.msg} at column {item.colno})")
                continue
            if isinstance(item, dict) and isinstance(item.get("id"), str | int):
                where = f"{where} (id {str(item['id'])!r})"
            if not isinstance(item, dict):
                report.skip(where, f"expected a conversation object, got {type(item).__name__}")
                continue
            try:
                conversation = _build(_PlainConversation.model_validate(item), fallback_time, report)
            except ValidationError as exc:
                report.skip(where, describe_validation_error(exc))
                continue
            if conversation.id in seen:
                report.skip(where, "the same id appears earlier in this file; the first one was kept")
                continue
            seen.add(conversation.id)
            yield conversation
