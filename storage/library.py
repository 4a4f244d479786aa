"""The one entry point to a pastchats store: import, search, list, read, delete.

Everything above storage (the CLI, the MCP tools, the benchmarks) goes through `Library`; the server
and the CLI open it one way, by need (`server.services.opening.open_store`). What keeps a store whole
is beside it in `storage.upkeep`: `healing` (repairs, re-embedding, redacting again) and `migrations`
(older store formats, in named steps).

Layout of a store (`home`): `lancedb/` (the truth and the vectors), `keyword/` (Tantivy, derived),
`vectors/` (a memory-mapped copy of the vectors for exact search, derived: `storage.stores.vector_matrix`),
`catalog.sqlite` (every chat's metadata and messages: what every read shows, derived, read without
LanceDB: `storage.stores.catalog`),
`store.json` (which embedding model the vectors come from), `write.lock` and `journal.json`, and with a
shared store on an object store, `shared.json` (what the last exchange saw: `storage.writing.exchange`). The
store is its user's alone (`storage.owner_only`): opening makes it so.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Literal

from storage.embedding.embedder import DEFAULT_MODEL, Embedder, FastEmbedder
from storage.errors import (
    DiskFull,
    EmbedderUnavailable,
    NotFound,
    StoreUncreatable,
    is_disk_full,
    is_read_only,
)
from storage.models import Conversation
from storage.owner_only import make_folder, tighten
from storage.query.filters import Filters
from storage.reads import read_chat as reading
from storage.reads.catalog_view import CatalogView
from storage.reads.chat_meta import ConversationMeta
from storage.reads.hiding import Hiding
from storage.reads.listing import StoreStats, add_touched, name_projects, project_spellings, recent_page, store_stats
from storage.reads.results import ChatPage, RecentResult, SearchMode, SearchResult
from storage.redaction import Redaction, Remembered
from storage.search import SHIPPED, Fusion, RankedUnit, SearchEngine
from storage.stores import catalog
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import LanceStore
from storage.stores.shared_store import SharedStore
from storage.units.passages import DEFAULT_OPTIONS, ChunkOptions
from storage.upkeep import healing, idle_release
from storage.upkeep.store_meta import refuse_newer, vector_size
from storage.upkeep.store_record import StoreRecord
from storage.writing import embedding_pass, exchange
from storage.writing.ingest import Ingestor, IngestProgress, IngestStats
from storage.writing.journal import DeletedWatch
from storage.writing.locks import WriteLock

ModelLoader = Callable[[str], Embedder]

__all__ = ["IngestProgress", "Library"]  # IngestProgress: what an import reports, for its callers

log = logging.getLogger(__name__)


class Library:
    def __init__(
        self,
        home: Path,
        embedder: Embedder | None,
        model_name: str,
        load_error: str | None,
        chunk_options: ChunkOptions = DEFAULT_OPTIONS,
        redaction: Redaction | None = None,
    ):
        self.home = home
        self.chunk_options = chunk_options
        self.redaction = redaction if redaction is not None else Redaction()
        self._remembered = Remembered(self.redaction)  # live sync's chats, redacted again only where new
        self.model_name = model_name
        self.embedder = embedder
        self.load_error = load_error
        self.lock = WriteLock(home)
        dim = embedder.dim if embedder is not None else vector_size(home)
        self.store = LanceStore(home / "lancedb", dim)
        self.keywords = KeywordIndex(home / "keyword")
        if self.keywords.damage is not None:
            log.info(
                "the keyword index in %s is damaged (%s): rebuilt when the store is repaired",
                home,
                self.keywords.damage,
            )
        # What a delete committed to and may not have removed yet: no read shows it (one stat a read).
        self.deleted = DeletedWatch(str(home))
        self.chats = CatalogView(home, self._rebuild_catalog_now, lambda: self.store)
        self.engine = SearchEngine(self.store, self.keywords, embedder, self.chats)
        self.engine.hidden = self.deleted.ids
        self.lock.on_acquire = lambda: healing.on_acquire(self)
        self._loader: ModelLoader | None = None  # set by `follow_store_model`
        self._record = StoreRecord(home)
        self.rebuild_catalog = False  # a migration asks for the whole catalog at the end of its hold
        self._shown: int | None = None  # within a write: how many of its journal ids the catalog shows
        # The shared tables on an object store this store exchanges chats with (`share`), if any.
        self.shared: SharedStore | None = None
        self.shared_probe: threading.Thread | None = None  # asking whether it answers, at open (searches)

    @classmethod
    def open(
        cls,
        home: Path,
        *,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        embedder: Embedder | None = None,
        chunk_options: ChunkOptions = DEFAULT_OPTIONS,
        load_model: bool = True,
        heal: bool = True,
        derived_dir: Path | None = None,
        redaction: Redaction | None = None,
    ) -> Library:
        """Open (creating if needed) the store in `home`. `embedder` overrides the model (tests);
        `load_model=False` opens it for reading and deleting only, without loading the model.
        `heal=False` leaves finishing a crashed write (and LanceDB) to the caller: `needs_repair`, `repair`.
        `derived_dir`: where the model's int8 copy for documents is kept (`FastEmbedder`); None: none.
        `redaction`: how secrets are taken out of what is written (default: every rule, nothing allowed);
        a store last redacted otherwise is redacted again when it is healed.

        If the model cannot load, the library still opens: search answers from the keyword leg and says so.
        A store that other users could read (written before pastchats kept it owner-only, or loosened
        since) is made owner-only, and that is said once (the walk: ~0.6 ms at 100k messages, ~4 µs an archived log).
        """
        try:
            home = make_folder(home.expanduser())
        except OSError as exc:
            if not is_read_only(exc):
                raise
            raise StoreUncreatable(home, "read-only" if exc.errno == errno.EROFS else "not writable") from None
        refuse_newer(home)
        if loosened := tighten(home):
            log.warning(
                "made the store in %s owner-only: %d file(s) and folder(s) in it could be read by other users "
                "of this machine",
                home,
                loosened,
            )
        error = None
        if embedder is None and not load_model:
            error = "not loaded for this command"
        elif embedder is None:
            try:
                embedder = FastEmbedder(model_name, cache_dir, derived_dir=derived_dir)
            except EmbedderUnavailable as exc:
                # INFO: commands say so in their own words (import, search notes, doctor)
                log.info("%s; search will be keyword-only", exc)
                error = str(exc)
        name = embedder.model_name if embedder else model_name
        library = cls(home, embedder, name, error, chunk_options, redaction)
        if heal:
            healing.heal(library)
        return library

    # ---- serving: LanceDB only when needed, the model attached when it has loaded -----------------

    def use_model(self, embedder: Embedder | None, error: str | None = None) -> None:
        """Search with `embedder` from now on (loaded elsewhere, e.g. on its own thread while the store
        opened); None with the reason keeps search keyword-only, and it says so."""
        self.embedder, self.load_error = embedder, (None if embedder is not None else error or "not loaded")
        if embedder is not None:
            self.model_name = embedder.model_name
            if embedder.dim != self.store.dim:  # vectors of another size: open the store at that size
                self._reopen_store(embedder.dim)
        self.engine = SearchEngine(self.store, self.keywords, embedder, self.chats)
        self.engine.hidden = self.deleted.ids

    def prepare(self) -> None:
        """Map the vector matrix and open the keyword reader now,
        so that the first search does not pay for it."""
        import pyarrow as pa

        idle_release.arrow_from_malloc()
        snapshot = self.store.matrix.snapshot()
        if snapshot is not None:
            self.store.matrix.changed_since(snapshot)
        self.keywords.doc_count()
        # Decoding the matrix's filter columns leaves ~13 MB of freed Arrow buffers that its allocator
        # (mimalloc) would otherwise keep for the life of the server.
        pa.default_memory_pool().release_unused()

    def needs_repair(self) -> bool:
        """Whether opening has work to do that reads need: a write or delete a crash left, another
        model's vectors, an older format, a derived file (catalog, matrix, keyword index) out of step.
        Answered from the files beside LanceDB, without opening it. (Old versions left for pruning do
        not count: the next write or `repair` deletes them.)"""
        return healing.needs_repair(self)

    def repair(self) -> None:
        """What opening does unless `heal=False`: finish what a crashed writer left, re-embed after a
        model change, rebuild what is out of step, prune old versions (opens LanceDB)."""
        healing.heal(self)

    def mend(self, *, wait: float = -1) -> list[str]:
        """Every repair there is (`pastchats doctor --fix`): each table read to its last value and
        restored where it cannot be, then every derived structure rebuilt where damaged or out of step.
        Returns what could not be repaired, one line each with its next step."""
        with self.writing(timeout=wait):
            unmended = healing.mend(self, thorough=True)
            healing.mend_derived(self)
            self.store.prune()
        return unmended

    def follow_store_model(self, loader: ModelLoader) -> None:
        """Keep searching with the model the store's vectors come from: when another process re-embeds
        the store with another model (`pastchats model use`), the next search loads it with `loader`
        (a query embedded with the old model would be compared with vectors it did not make)."""
        self._loader = loader

    def _follow_store(self) -> None:
        """Before a read answers: what another process recorded in `store.json` since, followed (one
        stat a read while it stays): chats it wrote unredacted (`PASTCHATS_REDACT=off`) or with other
        rules are redacted first, and another model's vectors are searched with that model."""
        self._record.follow(self._store_changed)

    def _store_changed(self, stored_model: object) -> bool:
        if not healing.follow_redaction(self):
            return False  # the writer still holds the store: the next read tries again
        if self._loader is not None and isinstance(stored_model, str) and stored_model != self.model_name:
            self._switch_to(stored_model, self._loader)
        return True

    def _switch_to(self, stored: str, loader: ModelLoader) -> None:
        log.warning("the store now uses %s (re-embedded by another process): loading it", stored)
        try:
            embedder = loader(stored)
            # The other process dropped and re-created the vectors' table: open it afresh.
            self._reopen_store(embedder.dim)
            self.use_model(embedder)
        except EmbedderUnavailable as exc:
            log.warning("%s; search is keyword-only until it is installed", exc)
            self.model_name = stored
            self.use_model(None, str(exc))

    # ---- the shared store on an object store --------------------------------------------------

    def share(self, shared: SharedStore) -> None:
        """Exchange chats with `shared` (`exchange`); searches say when it last could not be reached."""
        self.shared = shared

    def exchange(
        self,
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        wait: float = -1,
        forgotten: Collection[str] = (),
    ) -> exchange.ExchangeReport:
        """Send this machine's new and changed chats to the shared store and bring every other machine's
        here (`storage.writing.exchange`); `forgotten`: chats deleted here that must not come back (they
        are deleted there). Raises `SharedStoreUnreachable` when it does not answer."""
        if self.shared is None:
            raise ValueError("no shared store: call `share` first")
        return exchange.exchange(self, self.shared, progress=progress, wait=wait, forgotten=forgotten)

    def shared_notes(self) -> list[str]:
        """The note a read carries while the shared store's last contact failed."""
        if self.shared is None:
            return []
        note = exchange.unreachable_note(self.home, self.shared.uri)
        return [note] if note else []

    # ---- the write lock and what holds it ------------------------------------------------------

    def _reopen_store(self, dim: int) -> None:
        self.store = LanceStore(self.home / "lancedb", dim)

    def ingestor(self, live: bool = False) -> Ingestor:
        """Without a model the ingestor writes passages awaiting embedding (keyword-searchable at once):
        an import never refuses for want of the model. `live`: live sync's small writes, which redact
        only what is new in a chat this process redacted before."""
        return Ingestor(
            self.store,
            self.keywords,
            self.embedder,
            self.lock,
            self.chunk_options,
            model_name=self.model_name,
            redaction=self.redaction,
            remembered=self._remembered if live else None,
        )

    @contextmanager
    def writing(self, timeout: float) -> Iterator[None]:
        """Hold the write lock; before letting go, bring the catalog (`storage.stores.catalog`) in step with
        what was written: the chats this hold named in the journal and any a crashed writer left
        there, or every chat when the catalog did not reflect the store to begin with."""
        with self.lock.hold(timeout=timeout):
            mark = len(self.lock.touched)
            before = catalog.recorded_stamps(self.home)
            current = before is not None and before == catalog.table_stamps(self.store.path)
            self._shown = mark if current else None
            left = self.lock.pending()
            try:
                yield
                shown = mark if self._shown is None else self._shown
                ids = [*left, *self.lock.touched[shown:]]
                unchanged = catalog.table_stamps(self.store.path) == before
                if current and not ids and not self.rebuild_catalog and unchanged:
                    return  # nothing was written
                whole = not current or self.rebuild_catalog
                self.rebuild_catalog = False
                catalog.refresh(self.home, self.store, None if whole else ids)
            finally:
                self._shown = None
                del self.lock.touched[mark:]  # read by this hold alone: a long-lived server must not pile them up

    def _show_written(self) -> None:
        """Within a long write (an import's batches), bring the catalog in step with the chats written
        so far, so that readers show them batch by batch rather than when the whole import ends. Only
        where the catalog was in step when the hold began; otherwise the hold's end rebuilds it whole."""
        if self._shown is None or self.rebuild_catalog:
            return
        written = self.lock.touched[self._shown :]
        if written:
            catalog.refresh(self.home, self.store, written)
            self._shown += len(written)

    # ---- writes ------------------------------------------------------------------------------

    def import_conversations(
        self,
        conversations: Iterable[Conversation],
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        wait: float = -1,
        embed: bool = True,
        add_only: tuple[str, ...] = (),
        live: bool = False,
    ) -> IngestStats:
        """Upsert by id; only changed text is re-embedded. Each batch is read and redacted first, then
        written under the inter-process write lock, which is let go between batches.

        `embed=False` makes the import fast: new passages are stored and keyword-searchable at once, and
        await their embedding (`embed_pending`) before the vector leg finds them. Ids starting with one
        of `add_only` are added but never replace a stored chat (`Ingestor.ingest`). `live`: a small
        write of live sync, kept small: the tables are not scanned for damage first, and compaction and
        the vector matrix's rebuild (seconds at 100k messages) are left to `compact`, which the watcher
        runs once changes pause (its first sync of a turn is a whole one).
        """
        ingestor = self.ingestor(live=live)
        stats = ingestor.begin()

        def batch_done(done: IngestProgress) -> None:
            self._show_written()
            if progress is not None:
                progress(done)

        batches = ingestor.prepared(conversations)
        try:
            with self.writing(timeout=wait):
                healing.mend(self, check_tables=not live)  # a cut data file would fail the import half way otherwise
                healing.mend_keywords(self)
                ingestor.repair()
            # Each batch is read and redacted before the lock is taken to write it: the lock is held
            # for writing alone, and another import or sync writes between this one's batches.
            for batch in batches:
                with self.writing(timeout=wait):
                    ingestor.write_prepared(batch, batch_done, embed=embed, add_only=add_only)
            with self.writing(timeout=wait):
                if stats.written and not live:
                    ingestor.tidy(stats)
                try:
                    healing.write_meta(self)
                except OSError as exc:
                    if not is_disk_full(exc):
                        raise
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            raise DiskFull(
                f"the disk holding {self.home} is full: {stats.new} new and {stats.updated} updated chat(s) were "
                "imported before it filled and are searchable; the rest were not. Free some space, then run "
                "the import again (it skips what is already stored)."
            ) from None
        return stats

    def redact_ahead(self, conversations: Iterable[Conversation]) -> None:
        """Redact chats a live write is about to bring, with no lock held: the live write that follows
        finds them redacted (`storage.redaction.Remembered`) and holds the write lock to write alone."""
        for conversation in conversations:
            self._remembered.redact(conversation)

    def pending_embeddings(self) -> int:
        """How many passages await their embedding.

        Such passages are stored and keyword-searchable, and left out of the vector leg until
        `embed_pending` embeds them (an import with `embed=False`, or one made without the model).
        """
        with self.chats.open() as chats:
            return chats.pending_count()

    def switch_model(self, embedder: Embedder, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every passage with `embedder` (another model); keyword search works throughout.

        The passages are re-derived awaiting embedding (quick), then embedded in resumable batches.
        """
        with self.writing(timeout=-1):
            self.embedder, self.model_name, self.load_error = embedder, embedder.model_name, None
            self.engine.embedder = embedder
            ingestor = self.ingestor()
            ingestor.embedder = None  # written awaiting embedding; embedded below with progress
            self.store.reset_chunks(embedder.dim)
            ingestor.rederive_all()
            healing.write_meta(self)
        return self.embed_pending(progress=progress)

    def embed_pending(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        batch: int = embedding_pass.EMBED_BATCH,
        wait: float = -1,
        until: Callable[[], bool] | None = None,
        fold: bool = True,
    ) -> int:
        """Embed every passage that awaits it; returns how many passages were embedded.

        Works in batches of about `batch` passages (whole conversations), each committed on its own
        under the write lock, which is released between batches so imports and syncs can interleave.
        A kill loses at most the batch in flight; the next call resumes where this one stopped.
        `progress(done, total)` is called after each batch. `wait` is how long to wait for the lock
        (-1: as long as it takes; 0: not at all, StoreError if busy). `until`: asked between batches;
        True stops there, the rest left for a later call (the live watcher, when new text arrives).
        `fold=False` leaves the new vectors in LanceDB's new fragments and the matrix's change log
        (searches find them there) for a later `compact`, rather than compacting at the end (seconds
        at 100k messages, under the lock). Needs the embedding model.
        """
        return embedding_pass.embed_pending(self, progress=progress, batch=batch, wait=wait, until=until, fold=fold)

    def compact(self, *, wait: float = -1) -> None:
        """Fold what many small writes left (the live watcher's) into compacted tables and a rebuilt
        vector matrix, dropping the versions they replaced; the tables are checked first, as an
        import checks them."""
        with self.writing(timeout=wait):
            healing.mend(self, check_tables=True)
            self.fold()

    def fold(self) -> None:
        """Compact the tables and rebuild the vector matrix from them (under the write lock)."""
        self.store.ensure_indexes()
        self.store.optimize()  # one commit per batch: compact, and drop what they replaced
        # Readers trust the catalog only while it names the tables' newest versions: say at once that
        # compaction changed none of the chats, rather than after the matrix's rebuild.
        catalog.refresh(self.home, self.store, [])
        self.store.build_matrix()

    def delete(self, uris: Iterable[str], *, wait: float = -1) -> int:
        """Remove conversations from every index; returns how many existed.

        Crash-atomic: the ids are committed to the journal before any row goes, and whoever next holds
        the write lock (any command or server opening the store) finishes removing them. Ids that a
        killed delete left (`unfinished_deletes`) are taken off the journal here: the caller has them.
        """
        ids = list(dict.fromkeys(uris))
        with self.writing(timeout=wait):  # taking the lock finishes any delete a kill interrupted
            existing = sorted(self.store.versions(ids))
            if existing:
                self.lock.commit_delete(existing)
                healing.remove(self, existing)
            if existing or set(ids) & set(self.unfinished_deletes()):
                self.lock.finished_delete(ids, taken=True)
            return len(existing)

    def commit_delete(self, uris: Iterable[str], *, wait: float = -1) -> None:
        """Commit to deleting these conversations before doing it: from now on, if this process dies,
        the next command or server to open the store removes them. Nothing is removed yet: call
        `delete`, which also takes them off the journal once the caller has recorded them."""
        with self.lock.hold(timeout=wait):
            self.lock.commit_delete(dict.fromkeys(uris))

    def prune(self, *, wait: float = -1) -> None:
        """Drop the table versions the last writes superseded, when no reader needs them: after a
        delete, the last copies of the deleted text in LanceDB (compaction writes a version: the catalog
        follows)."""
        with self.writing(timeout=wait):
            self.store.prune()

    def unfinished_deletes(self) -> list[str]:
        """Conversations a delete committed to and whose caller may not have recorded them (it was
        killed): removed from every index, or about to be. `delete` them to take them off the list."""
        return sorted(set(self.lock.deleting()) | set(self.lock.deleted()))

    # ---- reads -------------------------------------------------------------------------------

    def resolve_project(self, project: str | None) -> tuple[str, ...] | None:
        """Every stored spelling of `project`, matched case-insensitively (raises UnknownProject)."""
        with self.chats.open() as chats:
            return project_spellings(chats, project)

    def search(
        self,
        query: str,
        *,
        max_results: int = 5,
        project: str | None = None,
        source: str | None = None,
        after: datetime | None = None,
        before: datetime | None = None,
        file: str | None = None,
        mode: SearchMode = "hybrid",
        fusion: Fusion = SHIPPED,
    ) -> SearchResult:
        """Hybrid search: strong chats first, then weak ones, each with its matches as question and answer.

        `after`/`before` select messages by their time (a chat is found through the part of it in the
        window); `project` matches case-insensitively; `file`: only the chats whose tool calls edited,
        created or read that file (a path, or its last parts: `session.py`, `auth/session.py`).
        """
        self._follow_store()
        touching = self.touching(file) if file is not None else None
        filters = Filters(
            project=self.resolve_project(project), source=source, after=after, before=before, chats=touching
        )
        result = self.engine.search(query, max_results=max_results, mode=mode, filters=filters, fusion=fusion)
        with self.chats.open() as chats:
            name_projects(result.chats, chats.column_counts("project"))
            add_touched(result.chats, self._less_hidden(chats))
        result.notes += self.shared_notes()
        return result

    def touching(self, file: str) -> frozenset[str]:
        """The chats whose tool calls edited, created or read `file` (a path, or its last parts), less
        the deleted: what `search(file=...)` and the page's file filter keep."""
        with self.chats.open() as chats:
            return frozenset(self._less_hidden(chats).touching(file))

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
        filters = Filters(project=self.resolve_project(project), source=source, after=after, before=before)
        units = self.engine.search_units(query, limit=limit, mode=mode, filters=filters, fusion=fusion)
        hidden = self.deleted.ids()
        return [unit for unit in units if unit.conversation_id not in hidden] if hidden else units

    def recent(
        self,
        *,
        n: int = 3,
        sort_order: Literal["asc", "desc"] = "desc",
        before: datetime | None = None,
        after: datetime | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> RecentResult:
        """Chats by `updated_at`; `before`/`after` are exclusive bounds and page through history.

        A page never splits chats that share an `updated_at`, so the next page's bound loses nothing.
        `source`: only chats from that source (as stored).
        """
        self._follow_store()
        with self.chats.open() as chats:
            shown = self._less_hidden(chats)
            page = recent_page(
                shown, n=n, sort_order=sort_order, before=before, after=after, project=project, source_name=source
            )
            add_touched(page.chats, shown)
        page.notes += self.shared_notes()
        return page

    def activity(
        self, *, project: str | None = None, source: str | None = None
    ) -> list[tuple[datetime, str, str, str | None]]:
        """(updated_at, id, source, project) of every chat (in `project`, any case; from `source`):
        what a timeline counts."""
        with self.chats.open() as chats:
            filters = Filters(project=project_spellings(chats, project), source=source)
            return self._less_hidden(chats).activity(filters)

    def names(self) -> tuple[list[str], list[str]]:
        """The sources and the projects chats have, as stored (a filter's choices), without `stats`' totals."""
        with self.chats.open() as chats:
            source = self._less_hidden(chats)
            sources = sorted(source.column_counts("source"), key=str.casefold)
            return sources, sorted(source.column_counts("project"), key=str.casefold)

    def redacted_chats(self, limit: int = 50) -> list[tuple[str, dict[str, int]]]:
        """The chats with the most secrets redacted, most first, each with its counts by kind."""
        with self.chats.open() as chats:
            return self._less_hidden(chats).redacted_chats(limit)

    def chat(self, uri: str) -> ConversationMeta:
        """The stored metadata of the chat a uri names, whole or shortened (`storage.reads.read_chat.meta_for`:
        NotFound, AmbiguousUri)."""
        self._follow_store()
        with self.chats.open() as chats:
            return reading.meta_for(self._less_hidden(chats), uri)

    def read_chat(self, uri: str, *, offset: int = 0, limit: int = 40, around: str | int | None = None) -> ChatPage:
        """A page of a conversation's messages; `around` (a message number from 1, or a message id)
        centres the page on that message."""
        self._follow_store()
        with self.chats.open() as chats:
            source = self._less_hidden(chats)
            page = reading.read_chat(source, uri, offset=offset, limit=limit, around=around)
            add_touched([page.chat], source)
            return page

    def get(self, uri: str) -> Conversation:
        """The whole stored conversation (raises NotFound)."""
        self._follow_store()
        with self.chats.open() as chats:
            conversation = None if uri in self.deleted.ids() else chats.conversation(uri)
        if conversation is None:
            raise NotFound(f"no chat with uri {uri!r}")
        return conversation

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None, ids: list[str] | None = None
    ) -> Iterator[Conversation]:
        """Whole conversations in id order, streamed (`export`)."""
        hidden = self.deleted.ids()
        with self.chats.open() as chats:
            for conversation in chats.iter_conversations(project=project, source=source, ids=ids):
                if conversation.id not in hidden:
                    yield conversation

    def stats(self) -> StoreStats:
        with self.chats.open() as chats:
            return store_stats(self._less_hidden(chats), self.home, self.model_name)

    def is_empty(self) -> bool:
        with self.chats.open() as chats:
            return chats.is_empty()

    def _rebuild_catalog_now(self) -> None:
        with self.writing(timeout=0):
            self.rebuild_catalog = True

    def _less_hidden(self, chats: catalog.Catalog) -> catalog.Catalog | Hiding:
        """The catalog less the chats a delete committed to (one stat a read while there are none)."""
        hidden = self.deleted.ids()
        return Hiding(chats, hidden) if hidden else chats

    def close(self) -> None:
        """Nothing to flush (every write commits); kept so callers can treat the library as a resource."""
