"""`read_chat` over any source of chat rows: the store (`Library.read_chat`, the `read_chat` tool) and
the catalog (`storage.catalog`: `pastchats read` without opening LanceDB). Tests compare the two
sources on the same stores and arguments."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from storage.errors import NotFound, UnknownMessage
from storage.hits import ConversationMeta, chat_hit, shown
from storage.models import Message
from storage.results import ChatPage


class PageSource(Protocol):
    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]: ...
    def message_range(self, conversation_id: str, first: int, last: int) -> list[Message]: ...
    def message_position(self, conversation_id: str, message_id: str) -> int | None: ...
    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]: ...


def read_chat(
    source: PageSource, uri: str, *, offset: int = 0, limit: int = 40, around: str | int | None = None
) -> ChatPage:
    """A page of a conversation's messages; `around` (a message number from 1, or a message id)
    centres the page on that message."""
    meta = meta_for(source, uri)
    uri = meta.id
    position = None if around is None else message_index(source, meta, around)
    if position is not None:
        offset = max(0, position - limit // 2)
    offset = max(0, min(offset, max(meta.message_count - 1, 0)))
    messages = source.message_range(uri, offset, offset + limit - 1)
    focus = {m.id for m in messages if m.index == position}
    end = offset + len(messages)
    return ChatPage(
        chat=chat_hit(meta, span=source.message_spans([uri]).get(uri)),
        messages=[shown(m, focus) for m in messages],
        offset=offset,
        next_offset=end if end < meta.message_count else None,
    )


def meta_for(source: PageSource, uri: str) -> ConversationMeta:
    """The chat a uri names: as stored, or as the text shows it (attribute-escaped)."""
    candidates = list(dict.fromkeys([uri, html.unescape(uri)]))
    metas = source.metas(candidates)
    for candidate in candidates:
        if candidate in metas:
            return metas[candidate]
    raise NotFound(f"no chat with uri {uri!r}")


def message_index(source: PageSource, meta: ConversationMeta, around: str | int) -> int:
    """The 0-based index of the message `around` names: its number as shown (`12`, `"#12"`) or its id."""
    if isinstance(around, str):
        position = source.message_position(meta.id, around)
        if position is not None:
            return position
        digits = around.strip().lstrip("#")
        if not digits.isdigit():
            raise UnknownMessage(
                f"around={around!r} is neither a message number (1-{meta.message_count}) nor a message id "
                f"of chat {meta.id!r}. Pass the number a result shows before the role, e.g. around=12."
            )
        around = int(digits)
    if not 1 <= around <= meta.message_count:
        raise UnknownMessage(
            f"around={around} is outside chat {meta.id!r}, which has messages 1-{meta.message_count}. "
            "Pass the number a result shows before the role, e.g. around=1."
        )
    return around - 1
