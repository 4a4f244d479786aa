"""The data model every importer produces and every index is built from.

Times are UTC everywhere: an aware datetime is converted, a naive one is taken to be UTC already.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass

from storage.times import require_storable, storable_or_none, utc

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")
# What an agent's tool call did: a file it edited, created or read, or a command it ran.
Action = Literal["edited", "created", "read", "ran"]
ACTIONS: tuple[Action, ...] = ("edited", "created", "read", "ran")


UtcDatetime = Annotated[datetime, AfterValidator(utc)]
# A chat's own times must be storable (importers skip the chat and say why before it gets here); a
# message's time outside the range is unknown, and the message takes its chat's time.
StoredTime = Annotated[datetime, AfterValidator(require_storable)]
MessageTime = Annotated[datetime | None, AfterValidator(storable_or_none)]


def content_hash(*parts: str) -> str:
    """A short, stable digest of text: decides what must be re-embedded or re-indexed."""
    digest = hashlib.blake2b(digest_size=12)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def in_order(messages: Iterable[Message]) -> Iterator[Message]:
    """The messages, checked as a conversation holds them (each at its position, no id twice) as they
    are read: a stored chat's messages can be checked without holding them all."""
    seen: set[str] = set()
    for position, message in enumerate(messages):
        if message.index != position:
            raise ValueError(f"message {message.id!r} has index {message.index}, expected {position}")
        if message.id in seen:
            raise ValueError(f"message id {message.id!r} appears twice")
        seen.add(message.id)
        yield message


@dataclass(frozen=True, slots=True)
class Touch:
    """A file an agent's tool call edited, created or read (`target`: its path, absolute where the
    chat's folder made it so), or a command it ran (`target`: the command line)."""

    action: Action
    target: Annotated[str, Field(min_length=1)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One turn of a conversation: validated as it is made, like a model, but a slotted dataclass, so
    that a chat of a million messages holds ~270 bytes a message rather than a model's ~680 (no
    per-instance dict and field set). A changed copy is `dataclasses.replace(message, text=...)`."""

    id: Annotated[str, Field(min_length=1)]
    index: Annotated[int, Field(ge=0, description="Position in the conversation, from 0.")]
    role: Role
    text: str
    created_at: MessageTime = None
    # The files this message's tool calls touched and the commands they ran, in the order called.
    touches: tuple[Touch, ...] = ()


class Conversation(BaseModel):
    """A whole chat, as imported from one source.

    `id` is stable and source-scoped (`claude:<uuid>`, `chatgpt:<id>`, `claude-code:<session>` ...):
    importing the same source again yields the same ids, which is what makes re-import idempotent.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    title: str
    created_at: StoredTime
    updated_at: StoredTime
    project: str | None = None
    url: str | None = None
    messages: list[Message]

    @model_validator(mode="after")
    def _check_messages(self) -> Conversation:
        for _ in in_order(self.messages):
            pass
        if self.updated_at < self.created_at:
            raise ValueError("updated_at is earlier than created_at")
        return self

    def fingerprint(self) -> str:
        """Changes whenever anything that is indexed changes."""
        parts = [self.source, self.title, self.project or "", self.url or ""]
        parts += [self.created_at.isoformat(), self.updated_at.isoformat()]
        for m in self.messages:
            parts += [m.id, m.role, m.text, m.created_at.isoformat() if m.created_at else ""]
            parts += [f"{touch.action} {touch.target}" for touch in m.touches]  # none: as before they existed
        return content_hash(*parts)
