"""`read_chat` over the catalog (`storage.stores.catalog`, less the chats a delete committed to):
`Library.read_chat`, behind the `read_chat` tool, `pastchats read` and the page.

The paging rules (which chat a uri names, which message `around` names, where a page starts) are
plain functions on plain values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.errors import AmbiguousUri, NotFound, PastTheEnd, UnknownMessage
from storage.reads.chat_meta import chat_hit, shown
from storage.reads.results import ChatPage

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime
    from typing import Protocol

    from storage.models import Message
    from storage.reads.chat_meta import ConversationMeta

    class PageSource(Protocol):
        def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]: ...
        def ids_starting(self, prefix: str, limit: int) -> list[str]: ...
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
    position = None
    if around is not None:
        position = message_index(meta.id, meta.message_count, around, lambda mid: source.message_position(uri, mid))
    offset = page_start(offset, limit, position, meta.message_count, uri)
    messages = source.message_range(uri, offset, offset + limit - 1)
    focus = {m.id for m in messages if m.index == position}
    end = offset + len(messages)
    return ChatPage(
        chat=chat_hit(meta, span=source.message_spans([uri]).get(uri)),
        messages=[shown(m, focus) for m in messages],
        offset=offset,
        next_offset=end if end < meta.message_count else None,
    )


def candidates(uri: str) -> list[str]:
    """The ids a uri may name, in the order they are tried: as stored, or as the text shows it
    (attribute-escaped)."""
    if "&" not in uri:  # nothing escaped (html.unescape would return it as it is); `html` costs ~2 ms to import
        return [uri]
    import html

    return list(dict.fromkeys([uri, html.unescape(uri)]))


# How many chats an ambiguous shortened uri names in its error.
SHOWN_CANDIDATES = 8


def meta_for(source: PageSource, uri: str) -> ConversationMeta:
    """The chat a uri names (`candidates`), or the one chat whose uri it starts (`ids_starting`: a uri
    shortened as people shorten commit hashes); AmbiguousUri when it starts several, NotFound when none."""
    tried = candidates(uri)
    metas = source.metas(tried)
    for candidate in tried:
        if candidate in metas:
            return metas[candidate]
    for candidate in tried:
        started = [i for i in source.ids_starting(candidate, SHOWN_CANDIDATES + 1) if not _reaches_past(i, candidate)]
        if len(started) > 1:
            raise AmbiguousUri(uri, started[:SHOWN_CANDIDATES], more=len(started) > SHOWN_CANDIDATES)
        if started and (found := source.metas(started)):
            return found[started[0]]
    raise not_found(uri)


def _reaches_past(chat_id: str, prefix: str) -> bool:
    """Whether `chat_id` goes on past the end of another chat's uri that `prefix` spells: a subagent's
    chat (`claude-code:<session>:<agent>`) is not what its session's whole uri names, even once the
    session is deleted, nor what a shortened one does while the session is there."""
    rest = chat_id[len(prefix) :] if chat_id.startswith(prefix) else chat_id.partition(":")[2][len(prefix) :]
    return ":" in rest


def not_found(uri: str) -> NotFound:
    return NotFound(f"no chat with uri {uri!r}")


def page_start(offset: int, limit: int, position: int | None, message_count: int, chat_id: str = "") -> int:
    """The index of a page's first message: centred on `position` when given. An offset past the last
    message is refused (UnknownMessage), naming the chat's last page."""
    if position is not None:
        return max(0, min(position - limit // 2, max(message_count - 1, 0)))
    if offset >= message_count and offset > 0:
        raise PastTheEnd(chat_id, offset, message_count, limit)
    return offset


def message_index(chat_id: str, message_count: int, around: str | int, position_of: Callable[[str], int | None]) -> int:
    """The 0-based index of the message `around` names: its number as shown (`12`, `"#12"`) or its id
    (`position_of` finds an id's index in the chat)."""
    if isinstance(around, str):
        position = position_of(around)
        if position is not None:
            return position
        digits = around.strip().lstrip("#")
        if not digits.isdigit():
            raise UnknownMessage(
                f"around={around!r} is neither a message number (1-{message_count}) nor a message id "
                f"of chat {chat_id!r}. Pass the number a result shows before the role, e.g. around=12."
            )
        around = int(digits)
    if not 1 <= around <= message_count:
        raise UnknownMessage(
            f"around={around} is outside chat {chat_id!r}, which has messages 1-{message_count}. "
            "Pass the number a result shows before the role, e.g. around=1."
        )
    return around - 1
