"""The one entry point to a pastchats store: import, search, list, read, delete.

Everything above storage (the CLI, the MCP tools, the benchmarks) goes through `Library`.
(Signatures are final; bodies are being filled in.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from storage.embedder import DEFAULT_MODEL, Embedder
from storage.models import Conversation
from storage.results import ChatPage, RecentResult, SearchMode, SearchResult


class StoreError(Exception):
    """An expected failure the user can act on (unknown uri, store locked, empty store...)."""


class NotFound(StoreError):
    pass


@dataclass
class IngestStats:
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class IngestProgress:
    conversations_done: int
    messages_done: int


@dataclass
class StoreStats:
    home: Path
    conversations: int
    messages: int
    chunks: int
    sources: dict[str, int]
    projects: dict[str, int]
    oldest: datetime | None
    newest: datetime | None
    model: str
    disk_bytes: int


class Library:
    @classmethod
    def open(
        cls,
        home: Path,
        *,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        embedder: Embedder | None = None,
    ) -> Library:
        """Open (creating if needed) the store in `home`. `embedder` overrides the model (tests).

        If the model cannot load, the library still opens: search answers from the keyword leg and says so.
        """
        raise NotImplementedError

    def import_conversations(
        self,
        conversations: Iterable[Conversation],
        *,
        progress: Callable[[IngestProgress], None] | None = None,
    ) -> IngestStats:
        """Upsert by id under the inter-process write lock; only changed text is re-embedded."""
        raise NotImplementedError

    def search(
        self,
        query: str,
        *,
        max_results: int = 5,
        project: str | None = None,
        source: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        mode: SearchMode = "hybrid",
    ) -> SearchResult:
        """Hybrid search; chats in rank order, each with its matches expanded to nearby messages."""
        raise NotImplementedError

    def recent(
        self,
        *,
        n: int = 3,
        sort_order: Literal["asc", "desc"] = "desc",
        before: datetime | None = None,
        after: datetime | None = None,
        project: str | None = None,
    ) -> RecentResult:
        """Chats by `updated_at`; `before`/`after` are exclusive bounds and page through history."""
        raise NotImplementedError

    def read_chat(
        self, uri: str, *, offset: int = 0, limit: int = 40, around: str | None = None
    ) -> ChatPage:
        """A page of a conversation's messages; `around` (a message id) centres the page on it."""
        raise NotImplementedError

    def get(self, uri: str) -> Conversation:
        """The whole stored conversation (raises NotFound)."""
        raise NotImplementedError

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None
    ) -> Iterator[Conversation]:
        raise NotImplementedError

    def delete(self, uris: Iterable[str]) -> int:
        """Remove conversations from every index; returns how many existed."""
        raise NotImplementedError

    def stats(self) -> StoreStats:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
