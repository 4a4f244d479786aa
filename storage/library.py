"""The one entry point to a pastchats store: import, search, list, read, delete.

Everything above storage (the CLI, the MCP tools, the benchmarks) goes through `Library`.

Layout of a store (`home`): `lancedb/` (the truth and the vectors), `keyword/` (Tantivy, derived),
`store.json` (which embedding model the vectors come from), `write.lock` and `journal.json`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from storage.chunking import DEFAULT_OPTIONS, ChunkOptions
from storage.embedder import DEFAULT_MODEL, Embedder, EmbedderUnavailable, FastEmbedder
from storage.filters import Filters, sql_in, sql_string
from storage.ingest import Ingestor, IngestProgress, IngestStats
from storage.keyword_index import KeywordIndex
from storage.lance_store import LanceStore
from storage.locks import StoreBusy, WriteLock
from storage.models import Conversation
from storage.recent import page_by_time, preview, preview_spans
from storage.results import ChatPage, RecentResult, SearchMode, SearchResult
from storage.search import SHIPPED, Fusion, RankedUnit, SearchEngine, chat_hit, shown

__all__ = ["IngestProgress", "IngestStats", "Library", "NotFound", "RankedUnit", "StoreError", "StoreStats"]

log = logging.getLogger(__name__)


class StoreError(Exception):
    """An expected failure the user can act on (unknown uri, store locked, no model...)."""


class NotFound(StoreError):
    pass


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
    def __init__(
        self,
        home: Path,
        embedder: Embedder | None,
        model_name: str,
        load_error: str | None,
        chunk_options: ChunkOptions = DEFAULT_OPTIONS,
    ):
        self.home = home
        self.chunk_options = chunk_options
        self.model_name = model_name
        self.embedder = embedder
        self.load_error = load_error
        self.lock = WriteLock(home)
        stored_dim = self._stored_meta().get("dim", 384)
        dim = embedder.dim if embedder is not None else (stored_dim if isinstance(stored_dim, int) else 384)
        self.store = LanceStore(home / "lancedb", dim)
        self.keywords = KeywordIndex(home / "keyword")
        self.engine = SearchEngine(self.store, self.keywords, embedder)

    @classmethod
    def open(
        cls,
        home: Path,
        *,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        embedder: Embedder | None = None,
        chunk_options: ChunkOptions = DEFAULT_OPTIONS,
    ) -> Library:
        """Open (creating if needed) the store in `home`. `embedder` overrides the model (tests).

        If the model cannot load, the library still opens: search answers from the keyword leg and says so.
        """
        home = home.expanduser()
        home.mkdir(parents=True, exist_ok=True)
        error = None
        if embedder is None:
            try:
                embedder = FastEmbedder(model_name, cache_dir)
            except EmbedderUnavailable as exc:
                log.warning("%s; search will be keyword-only", exc)
                error = str(exc)
        library = cls(home, embedder, embedder.model_name if embedder else model_name, error, chunk_options)
        library._heal()
        return library

    # ---- housekeeping ------------------------------------------------------------------------

    def _stored_meta(self) -> dict[str, object]:
        try:
            data = json.loads((self.home / "store.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_meta(self) -> None:
        if self.embedder is not None:
            meta = {"format": 1, "model": self.embedder.model_name, "dim": self.embedder.dim}
            (self.home / "store.json").write_text(json.dumps(meta), encoding="utf-8")

    def _ingestor(self) -> Ingestor:
        if self.embedder is None:
            raise StoreError(f"cannot import without the embedding model ({self.load_error})")
        return Ingestor(self.store, self.keywords, self.embedder, self.lock, self.chunk_options)

    def _heal(self) -> None:
        """Finish what a crashed writer left, rebuild a lost keyword index, re-embed after a model change."""
        try:
            with self.lock.hold(timeout=0):
                stored_model = self._stored_meta().get("model")
                if self.embedder is not None:
                    ingestor = self._ingestor()
                    if stored_model not in (None, self.embedder.model_name) or (
                        self.store.chunk_dim() != self.embedder.dim
                    ):
                        log.warning("embedding model changed to %s: re-embedding", self.embedder.model_name)
                        ingestor.reembed_all()
                    ingestor.repair()
                    self._write_meta()
                    if self.keywords.doc_count() != self.store.chunks.count_rows():
                        log.warning("keyword index out of step with the store: rebuilding it")
                        ingestor.rebuild_keywords()
                if self.store.matrix_needs_build():  # first open after an upgrade, or the files were lost
                    log.info("building the vector matrix (%d passages)", self.store.build_matrix())
        except StoreBusy:
            log.info("another process is writing; it will finish any repair")

    # ---- writes ------------------------------------------------------------------------------

    def import_conversations(
        self,
        conversations: Iterable[Conversation],
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        wait: float = -1,
    ) -> IngestStats:
        """Upsert by id under the inter-process write lock; only changed text is re-embedded."""
        ingestor = self._ingestor()
        try:
            with self.lock.hold(timeout=wait):
                ingestor.repair()
                stats = ingestor.ingest(conversations, progress)
                self._write_meta()
                return stats
        except StoreBusy as exc:
            raise StoreError(f"{exc}; try again when it has finished") from None

    def delete(self, uris: Iterable[str], *, wait: float = -1) -> int:
        """Remove conversations from every index; returns how many existed."""
        ids = list(dict.fromkeys(uris))
        try:
            with self.lock.hold(timeout=wait):
                existing = sorted(self.store.metas(ids))
                if existing:
                    self.lock.begin(existing)
                    self.store.delete(existing)
                    self.keywords.replace(existing, [], {})
                    self.lock.done()
                return len(existing)
        except StoreBusy as exc:
            raise StoreError(f"{exc}; try again when it has finished") from None

    # ---- reads -------------------------------------------------------------------------------

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
        fusion: Fusion = SHIPPED,
    ) -> SearchResult:
        """Hybrid search; chats in rank order, each with its matches expanded to nearby messages."""
        filters = Filters(project=project, source=source, after=after, before=before)
        return self.engine.search(query, max_results=max_results, mode=mode, filters=filters, fusion=fusion)

    def search_units(
        self,
        query: str,
        *,
        limit: int = 50,
        mode: SearchMode = "hybrid",
        project: str | None = None,
        source: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        fusion: Fusion = SHIPPED,
    ) -> list[RankedUnit]:
        """Retrieval units in fused rank order, before grouping by chat (for evaluation and tooling)."""
        filters = Filters(project=project, source=source, after=after, before=before)
        return self.engine.search_units(query, limit=limit, mode=mode, filters=filters, fusion=fusion)

    def recent(
        self,
        *,
        n: int = 3,
        sort_order: Literal["asc", "desc"] = "desc",
        before: datetime | None = None,
        after: datetime | None = None,
        project: str | None = None,
    ) -> RecentResult:
        """Chats by `updated_at`; `before`/`after` are exclusive bounds and page through history.

        A page never splits chats that share an `updated_at`, so the next page's bound loses nothing.
        """
        timeline = self.store.timeline(Filters(project=project, after=after, before=before))
        page, more = page_by_time(timeline, n, sort_order)
        metas = self.store.metas([cid for _, cid in page])
        spans = {cid: preview_spans(meta.message_count) for cid, meta in metas.items()}
        messages = self.store.message_windows(spans)
        chats = [chat_hit(metas[cid], preview(spans[cid], messages.get(cid, []))) for _, cid in page if cid in metas]
        notes = []
        if len(page) > n:
            notes.append(f"{len(page)} chats shown rather than {n}: they share an updated_at with the last one")
        last = metas[page[-1][1]].updated_at if page and page[-1][1] in metas else None
        return RecentResult(
            chats=chats,
            sort_order=sort_order,
            next_before=last if more and sort_order == "desc" else None,
            next_after=last if more and sort_order == "asc" else None,
            notes=notes,
        )

    def read_chat(self, uri: str, *, offset: int = 0, limit: int = 40, around: str | None = None) -> ChatPage:
        """A page of a conversation's messages; `around` (a message id) centres the page on it."""
        metas = self.store.metas([uri])
        if uri not in metas:
            raise NotFound(f"no chat with uri {uri!r}")
        meta = metas[uri]
        if around is not None:
            rows = (
                self.store.messages.search()
                .where(f"conversation_id = {sql_string(uri)} AND id = {sql_string(around)}")
                .select(["position"])
                .limit(1)
                .to_arrow()
                .to_pylist()
            )
            if not rows:
                raise NotFound(f"chat {uri!r} has no message with id {around!r}")
            offset = max(0, rows[0]["position"] - limit // 2)
        offset = max(0, min(offset, max(meta.message_count - 1, 0)))
        messages = self.store.message_range(uri, offset, offset + limit - 1)
        focus = {around} if around else set()
        end = offset + len(messages)
        return ChatPage(
            chat=chat_hit(meta),
            messages=[shown(m, focus) for m in messages],
            offset=offset,
            next_offset=end if end < meta.message_count else None,
        )

    def get(self, uri: str) -> Conversation:
        """The whole stored conversation (raises NotFound)."""
        conversation = self.store.conversation(uri)
        if conversation is None:
            raise NotFound(f"no chat with uri {uri!r}")
        return conversation

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None, ids: list[str] | None = None
    ) -> Iterator[Conversation]:
        where = Filters(project=project, source=source).sql()
        if ids is not None:
            where = " AND ".join(filter(None, [where, sql_in("id", ids)]))
        return self.store.iter_conversations(where)

    def stats(self) -> StoreStats:
        conversations, messages, chunks = self.store.counts()
        timeline = self.store.timeline(Filters())
        times = [t for t, _ in timeline]
        return StoreStats(
            home=self.home,
            conversations=conversations,
            messages=messages,
            chunks=chunks,
            sources=self.store.column_counts("source"),
            projects=self.store.column_counts("project"),
            oldest=min(times).replace(tzinfo=UTC) if times else None,
            newest=max(times).replace(tzinfo=UTC) if times else None,
            model=self.model_name,
            disk_bytes=self.store.disk_bytes(),
        )

    def is_empty(self) -> bool:
        return int(self.store.conversations.count_rows()) == 0

    def close(self) -> None:
        """Nothing to flush (every write commits); kept so callers can treat the library as a resource."""
