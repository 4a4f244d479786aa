"""A chat as results show it, built from its stored metadata: shared by search, `recent` and the catalog.

Free of LanceDB on purpose: `stats` and `recent` answer from the catalog (`storage.stores.catalog`) without
importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.evidence import Strength
from storage.models import Message
from storage.reads.results import ChatHit, Match, ShownMessage
from storage.times import utc


@dataclass(frozen=True)
class ConversationMeta:
    id: str
    source: str
    title: str
    created_at: datetime
    updated_at: datetime
    project: str | None
    url: str | None
    message_count: int
    version: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ConversationMeta:
        """From a conversations row as LanceDB (or the chat rows beside the matrix) gives it."""
        return cls(
            id=row["id"],
            source=row["source"],
            title=row["title"],
            created_at=utc(row["created_at"]),
            updated_at=utc(row["updated_at"]),
            project=row["project"],
            url=row["url"],
            message_count=row["message_count"],
            version=row["version"],
        )


def chat_hit(
    meta: ConversationMeta,
    matches: list[Match] | None = None,
    *,
    span: tuple[datetime, datetime] | None = None,
    strength: Strength | None = None,
) -> ChatHit:
    return ChatHit(
        uri=meta.id,
        title=meta.title,
        url=meta.url,
        source=meta.source,
        project=meta.project,
        created_at=meta.created_at,
        updated_at=meta.updated_at,
        first_message_at=span[0] if span else None,
        last_message_at=span[1] if span else None,
        message_count=meta.message_count,
        strength=strength,
        matches=matches or [],
    )


def shown(message: Message, matched: set[str]) -> ShownMessage:
    return ShownMessage(
        id=message.id,
        index=message.index,
        number=message.index + 1,
        role=message.role,
        text=message.text,
        created_at=message.created_at,
        matched=message.id in matched,
    )
