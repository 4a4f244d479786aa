"""Small builders for storage tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.models import Conversation, Message

BASE = datetime(2025, 1, 1, tzinfo=UTC)


def conversation(
    cid: str,
    texts: list[str],
    *,
    title: str | None = None,
    project: str | None = None,
    source: str = "pastchats",
    day: int = 0,
    updated: datetime | None = None,
) -> Conversation:
    created = BASE + timedelta(days=day)
    messages = [
        Message(id=f"{cid}-m{i}", index=i, role="user" if i % 2 == 0 else "assistant", text=text)
        for i, text in enumerate(texts)
    ]
    return Conversation(
        id=cid,
        source=source,
        title=title or texts[0][:40],
        created_at=created,
        updated_at=updated or created + timedelta(hours=1),
        project=project,
        messages=messages,
    )
