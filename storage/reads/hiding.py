"""The store as readers must see it while a delete is being finished: without the chats the delete
committed to, whatever rows of theirs an index still holds (`storage.writing.journal.DeletedWatch`).

Used by `Library` only while the journal names such chats (a delete committed and not yet finished):
the usual read pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from storage.models import Message
from storage.query.filters import Filters
from storage.reads.chat_meta import ConversationMeta
from storage.reads.listing import page_by_time
from storage.stores.catalog import Catalog


class Hiding:
    """A `ChatSource` and `PageSource` (`storage.reads.listing`, `storage.reads.read_chat`) over the catalog,
    less `hidden`."""

    def __init__(self, store: Catalog, hidden: frozenset[str]):
        self.store = store
        self.hidden = hidden

    def timeline(self, filters: Filters) -> list[tuple[datetime, str]]:
        return [(at, cid) for at, cid in self.store.timeline(filters) if cid not in self.hidden]

    def activity(self, filters: Filters) -> list[tuple[datetime, str, str, str | None]]:
        return [row for row in self.store.activity(filters) if row[1] not in self.hidden]

    def redacted_chats(self, limit: int) -> list[tuple[str, dict[str, int]]]:
        return self.store.redacted_chats(limit, excluding=self.hidden)

    def time_page(
        self, filters: Filters, n: int, sort_order: Literal["asc", "desc"]
    ) -> tuple[list[tuple[datetime, str]], bool]:
        return page_by_time(self.timeline(filters), n, sort_order)

    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]:
        return self.store.metas([cid for cid in ids if cid not in self.hidden])

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        found = self.store.ids_starting(prefix, limit + len(self.hidden))
        return [cid for cid in found if cid not in self.hidden][:limit]

    def message_windows(self, windows: dict[str, list[tuple[int, int]]]) -> dict[str, list[Message]]:
        return self.store.message_windows({cid: w for cid, w in windows.items() if cid not in self.hidden})

    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]:
        return self.store.message_spans([cid for cid in ids if cid not in self.hidden])

    def touching(self, path: str) -> set[str]:
        return self.store.touching(path) - self.hidden

    def touches(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        return self.store.touches([cid for cid in ids if cid not in self.hidden])

    def message_range(self, conversation_id: str, first: int, last: int) -> list[Message]:
        return [] if conversation_id in self.hidden else self.store.message_range(conversation_id, first, last)

    def message_position(self, conversation_id: str, message_id: str) -> int | None:
        return None if conversation_id in self.hidden else self.store.message_position(conversation_id, message_id)

    # The counts leave out the hidden chats' rows that are still there, whichever of them the finisher
    # has removed so far.
    def column_counts(self, column: str) -> dict[str, int]:
        return self.store.column_counts(column, excluding=self.hidden)

    def counts(self) -> tuple[int, int, int]:
        every, hidden = self.store.counts(), self.store.counts(sorted(self.hidden))
        return (
            max(every[0] - hidden[0], 0),
            max(every[1] - hidden[1], 0),
            max(every[2] - hidden[2], 0),
        )

    def pending_count(self) -> int:
        return max(self.store.pending_count() - self.store.pending_count(sorted(self.hidden)), 0)

    def redactions(self) -> dict[str, dict[str, int]]:
        return self.store.redactions(excluding=self.hidden)

    def disk_bytes(self) -> int:
        return self.store.disk_bytes()
