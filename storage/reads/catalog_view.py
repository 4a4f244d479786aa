"""The catalog as every read sees it: the store's own (`storage.stores.catalog`), or, while that cannot
be read and this process may not rebuild it (a writer holds the lock, the store is read-only), a
private one built from LanceDB. Reads never wait for a writer.

Search reads the chats it shows through this too (`metas`, `message_windows`, `message_spans`), so
whichever catalog the last read settled on serves both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path

from storage.errors import StoreBusy, StoreReadOnly
from storage.models import Message
from storage.reads.chat_meta import ConversationMeta
from storage.stores import catalog

log = logging.getLogger("storage.library")


class CatalogView:
    def __init__(self, home: Path, rebuild: Callable[[], None], truth: Callable[[], catalog.Truth]):
        """`rebuild`: has the store's own catalog rebuilt now (raises StoreBusy or StoreReadOnly when
        it cannot be); `truth`: the tables a private catalog is built from."""
        self.home = home
        self.private: Path | None = None  # a catalog built outside the store, while its own cannot be read
        self._rebuild = rebuild
        self._truth = truth

    @contextmanager
    def open(self) -> Iterator[catalog.Catalog]:
        """The read model, as the last finished write left it; built first when there is none (a new
        store, a lost, damaged or older file)."""
        with ExitStack() as stack:
            try:
                chats = stack.enter_context(catalog.Catalog.open(self.home))
            except catalog.CatalogMissing:
                if self.private is None or not self.private.exists():
                    try:
                        self._rebuild()
                    except (StoreBusy, StoreReadOnly) as exc:
                        log.info("reading from a private catalog (%s)", exc)
                        self.private = catalog.build_private(self.home, self._truth())
                try:
                    chats = stack.enter_context(catalog.Catalog.open(self.home))
                    self.private = None
                except catalog.CatalogMissing:
                    if self.private is None:  # the rebuild failed: what LanceDB still holds
                        self.private = catalog.build_private(self.home, self._truth())
                    chats = stack.enter_context(catalog.Catalog.open(self.home, file=self.private))
            yield chats

    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]:
        with catalog.Catalog.open(self.home, file=self.private) as chats:
            return chats.metas(ids)

    def message_windows(self, windows: dict[str, list[tuple[int, int]]]) -> dict[str, list[Message]]:
        """The messages in each chat's (start, end) index windows, from the catalog."""
        with catalog.Catalog.open(self.home, file=self.private) as chats:
            return chats.message_windows(windows)

    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]:
        with catalog.Catalog.open(self.home, file=self.private) as chats:
            return chats.message_spans(ids)
