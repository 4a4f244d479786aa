"""The one entry point to a pastchats store: import, search, list, read, delete.

Everything above storage (the CLI, the MCP tools, the benchmarks) goes through `Library`.

Layout of a store (`home`): `lancedb/` (the truth and the vectors), `keyword/` (Tantivy, derived),
`vectors/` (a memory-mapped copy of the vectors for exact search, derived: `storage.stores.vector_matrix`),
`catalog.sqlite` (every chat's metadata and messages: what every read shows, derived, read without
LanceDB: `storage.stores.catalog`),
`store.json` (which embedding model the vectors come from), `write.lock` and `journal.json`. The
store is its user's alone (`storage.owner_only`): opening makes it so.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Literal

import pyarrow as pa

from storage import idle_release, reading
from storage.chunking import DEFAULT_OPTIONS, ChunkOptions
from storage.embedding.embedder import DEFAULT_MODEL, Embedder, FastEmbedder
from storage.errors import (
    DiskFull,
    EmbedderUnavailable,
    NotFound,
    StoreBusy,
    StoreError,
    StoreReadOnly,
    UnknownMessage,
    UnknownProject,
    is_disk_full,
)
from storage.filters import Filters
from storage.hiding import Hiding
from storage.ingest import BATCH_CONVERSATIONS, Ingestor, IngestProgress, IngestStats
from storage.journal import DeletedWatch
from storage.locks import WriteLock
from storage.models import Conversation
from storage.owner_only import make_folder, tighten
from storage.recent import StoreStats, project_spellings, recent_page, store_stats
from storage.redaction import Redaction
from storage.results import ChatPage, RecentResult, SearchMode, SearchResult
from storage.search import SHIPPED, Fusion, RankedUnit, SearchEngine
from storage.store_meta import STORE_FORMAT, read_meta, refuse_newer
from storage.stores import catalog
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import TABLE_NAMES, LanceStore

ModelLoader = Callable[[str], Embedder]

__all__ = [
    "STORE_FORMAT",
    "IngestProgress",
    "IngestStats",
    "Library",
    "NotFound",
    "RankedUnit",
    "StoreError",
    "StoreStats",
    "UnknownMessage",
    "UnknownProject",
]

log = logging.getLogger(__name__)

# Present while the conversations table is being restored from the catalog (the version it was restored
# to, or null when it started again): a restore a crash cut short is finished by the next writer
# before anything, the catalog above all, is derived from the half-restored table.
RESTORING = "restoring.json"


def write_restoring(path: Path, version: int | None) -> None:
    path.write_text(json.dumps({"newer_than": version}), encoding="utf-8")


def read_restoring(path: Path) -> int | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("newer_than")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


EMBED_BATCH = 512  # passages embedded per commit by `embed_pending`: ~10-30 s of model time here


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
        self.model_name = model_name
        self.embedder = embedder
        self.load_error = load_error
        self.lock = WriteLock(home)
        dim = embedder.dim if embedder is not None else self._vector_size()
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
        self.engine = SearchEngine(self.store, self.keywords, embedder)
        self.engine.hidden = self.deleted.ids
        self.lock.on_acquire = self._on_acquire
        self._follow: ModelLoader | None = None
        self._meta_stamp: tuple[int, int, int] | None = None
        self._switching = threading.Lock()
        self._rebuild_catalog = False  # a migration asks for the whole catalog at the end of its hold
        self._shown: int | None = None  # within a write: how many of its journal ids the catalog shows

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
        home = make_folder(home.expanduser())
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
            library._heal()
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
        self.engine = SearchEngine(self.store, self.keywords, embedder)
        self.engine.hidden = self.deleted.ids

    def prepare(self) -> None:
        """Map the vector matrix and open the keyword reader now,
        so that the first search does not pay for it."""
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
        if self.lock.pending() or self.lock.deleting():
            return True
        if self._derived_damage():
            return True
        meta = self._stored_meta()
        if meta.get("format") != STORE_FORMAT or self._needs_redaction():
            return True
        if self.embedder is not None and (meta.get("model"), meta.get("dim")) != (self.model_name, self.embedder.dim):
            return True
        stamps = catalog.table_stamps(self.store.path)
        if stamps is None or self.store.matrix.needs_build(stamps["chunks"][0]):
            return True
        with catalog.Catalog.read(self.home) as current:
            chunks = None if current is None else current.counts()[2]
        return chunks is None or self.keywords.doc_count() != chunks

    def repair(self) -> None:
        """What opening does unless `heal=False`: finish what a crashed writer left, re-embed after a
        model change, rebuild what is out of step, prune old versions (opens LanceDB)."""
        self._heal()

    def mend(self, *, wait: float = -1) -> list[str]:
        """Every repair there is (`pastchats doctor --fix`): each table read to its last value and
        restored where it cannot be, then every derived structure rebuilt where damaged or out of step.
        Returns what could not be repaired, one line each with its next step."""
        with self._writing(timeout=wait):
            unmended = self._mend(thorough=True)
            self._mend_derived()
            self.store.prune()
        return unmended

    def follow_store_model(self, loader: ModelLoader) -> None:
        """Keep searching with the model the store's vectors come from: when another process re-embeds
        the store with another model (`pastchats model use`), the next search loads it with `loader`
        (a query embedded with the old model would be compared with vectors it did not make)."""
        self._follow = loader
        self._meta_stamp = self._meta_file_stamp()

    def _meta_file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = (self.home / "store.json").stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size, info.st_ino

    def _follow_store(self) -> None:
        """Before a read answers: what another process recorded in `store.json` since, followed (one
        stat a read while it stays): chats it wrote unredacted (`PASTCHATS_REDACT=off`) or with other
        rules are redacted first, and another model's vectors are searched with that model."""
        stamp = self._meta_file_stamp()
        if stamp == self._meta_stamp:
            return
        with self._switching:
            if stamp == self._meta_stamp:
                return
            if not self._follow_redaction():
                return  # the writer still holds the store: the next read tries again
            stored = self._stored_meta().get("model")
            if self._follow is not None and isinstance(stored, str) and stored != self.model_name:
                log.warning("the store now uses %s (re-embedded by another process): loading it", stored)
                try:
                    embedder = self._follow(stored)
                    # The other process dropped and re-created the vectors' table: open it afresh.
                    self._reopen_store(embedder.dim)
                    self.use_model(embedder)
                except EmbedderUnavailable as exc:
                    log.warning("%s; search is keyword-only until it is installed", exc)
                    self.model_name = stored
                    self.use_model(None, str(exc))
            self._meta_stamp = stamp

    def _follow_redaction(self) -> bool:
        """Redact what another process wrote unredacted or with other rules; False while it cannot yet
        (the store is busy: a writer is still at work)."""
        if not self._needs_redaction():
            return True
        log.warning("%s holds chats another process wrote without today's redaction: redacting them", self.home)
        try:
            with self._writing(timeout=0):
                self._redact_stored(self._ingestor())
        except StoreBusy:
            log.info("another process is writing; redacting once it lets go of the store")
            return False
        except StoreError as exc:  # read-only, or damage: reads go on, as when the store was opened
            log.warning("could not redact the store in %s now: %s", self.home, exc)
        return True

    # ---- housekeeping ------------------------------------------------------------------------

    def _stored_meta(self) -> dict[str, object]:
        return read_meta(self.home)

    def _needs_redaction(self) -> bool:
        """Whether stored chats may hold what this redaction would take out: written before redaction,
        with older rules or a longer allow list. (Turning redaction off never rewrites what was redacted.)"""
        return self.redaction.enabled and self._stored_meta().get("redaction") != self.redaction.stamp

    def _redact_stored(self, ingestor: Ingestor) -> None:
        """Redact what the store holds with today's rules, once; without the model, changed passages
        wait for their embedding (keyword-searchable at once)."""
        if not self._needs_redaction():
            return
        if self.store.conversation_ids():
            log.warning("checking the chats stored in %s for secrets (once, with the current rules)", self.home)
            stats = ingestor.redact_stored(embed=self.embedder is not None)
            # The versions before the pass still hold the secrets: gone now unless a reader is mid-query,
            # else at the next write or open once it cannot be (`LanceStore.prune`).
            self.store.prune()
            if stats.redacted:
                counts = ", ".join(f"{kind} {n}" for kind, n in stats.redacted.most_common())
                log.warning("redacted %d secret(s) in %d chat(s): %s", stats.redacted.total(), stats.written, counts)
        if ingestor.quarantine.rewrite(self.redaction.redact_record):  # chats set aside hold no secret either
            log.warning("redacted secrets in the chats set aside in %s", ingestor.quarantine.directory)
        self._record_meta(redaction=self.redaction.stamp)

    def _record_meta(self, **values: object) -> None:
        (self.home / "store.json").write_text(json.dumps(self._stored_meta() | values), encoding="utf-8")

    def _vector_size(self) -> int:
        """The size of the stored vectors: `store.json`'s, unless the vector matrix (built from the
        vectors themselves) says otherwise; then the matrix is right and `store.json` is corrected at
        the next repair."""
        stored = self._stored_meta().get("dim")
        try:
            built = json.loads((self.home / "vectors" / "manifest.json").read_text(encoding="utf-8")).get("dim")
        except (OSError, ValueError, AttributeError):
            built = None
        if isinstance(built, int) and built != stored:
            return built
        return stored if isinstance(stored, int) else 384

    def _reopen_store(self, dim: int) -> None:
        private = self.store.catalog_file
        self.store = LanceStore(self.home / "lancedb", dim)
        self.store.catalog_file = private

    def _derived_damage(self) -> list[str]:
        """The derived structures found damaged, each with why (from the files, without LanceDB)."""
        found = []
        if self.keywords.damage is not None:
            found.append(f"the keyword index ({self.keywords.damage})")
        if (matrix := self.store.matrix.damage()) is not None:
            found.append(f"the vector matrix ({matrix})")
        if (catalog_damage := catalog.damage(self.home / catalog.FILE)) is not None:
            found.append(f"the catalog ({catalog_damage})")
        return found

    def _older_format(self) -> int | None:
        """The stored format when it is older than this pastchats' (None when current or unrecorded)."""
        found = self._stored_meta().get("format")
        return found if isinstance(found, int) and found < STORE_FORMAT else None

    def _write_meta(self) -> None:
        """Record what the store now holds: its format and model, and that chats written with redaction
        off may hold secrets (so turning it on again redacts them)."""
        stored = self._stored_meta()
        meta = stored | ({"redaction": "off"} if not self.redaction.enabled else {})
        if self.embedder is not None:
            meta |= {"format": STORE_FORMAT, "model": self.embedder.model_name, "dim": self.embedder.dim}
        elif not stored:
            # Without a loaded model, only a missing record is written: the model on record stays the
            # one the vectors come from (a command run with another PASTCHATS_MODEL must not change it).
            meta |= {"format": STORE_FORMAT, "model": self.model_name, "dim": self.store.dim}
        if meta != stored:
            (self.home / "store.json").write_text(json.dumps(meta), encoding="utf-8")

    def _ingestor(self) -> Ingestor:
        """Without a model the ingestor writes passages awaiting embedding (keyword-searchable at once):
        an import never refuses for want of the model."""
        return Ingestor(
            self.store,
            self.keywords,
            self.embedder,
            self.lock,
            self.chunk_options,
            model_name=self.model_name,
            redaction=self.redaction,
        )

    def _heal(self) -> None:
        """Finish what a crashed writer left, make the tables and every derived structure whole again
        (`_mend`), re-embed after a model change. Never fails the open: reads answer from what is
        intact whatever cannot be repaired now."""
        try:
            with self._writing(timeout=0):
                self._mend(check_tables=True)
                if self._older_format() is not None:  # needs no model: before any write of today's rows
                    self.store.drop_copies()
                stored_model = self._stored_meta().get("model")
                if self.embedder is not None:
                    ingestor = self._ingestor()
                    if stored_model not in (None, self.embedder.model_name) or (
                        self.store.chunk_dim() != self.embedder.dim
                    ):
                        log.warning("embedding model changed to %s: re-embedding", self.embedder.model_name)
                        ingestor.reembed_all()
                    self._repair(ingestor)
                    older = self._older_format()
                    if older is not None:
                        log.warning(
                            "migrating the store in %s from format %d to %d: rebuilding its catalog and "
                            "search units from the conversations table (once; no chat is lost)",
                            self.home,
                            older,
                            STORE_FORMAT,
                        )
                        if older < 3:  # units from before exchange windows: derived again
                            ingestor.rederive_all()
                        self._rebuild_catalog = True
                    self._write_meta()
                elif (older := self._older_format()) is not None and older >= 3:  # the rest needs no model
                    log.warning(
                        "migrating the store in %s from format %d to %d (once; no chat is lost)",
                        self.home,
                        older,
                        STORE_FORMAT,
                    )
                    self._rebuild_catalog = True
                    self._record_meta(format=STORE_FORMAT)
                self._mend_derived()
                if self._older_format() is None:  # redacted as today's chats are (format 1-2 waits for the model)
                    self._redact_stored(self._ingestor())
                self.store.prune()  # what the last writes superseded, once no reader can still need it
        except StoreBusy:
            log.info("another process is writing; it will finish any repair")
        except StoreReadOnly:
            log.info("the store in %s is read-only: reading what is there, repairing nothing", self.home)
        except StoreError as exc:  # damage no repair could undo now: reads go on from what is intact
            log.warning("%s", exc)

    # ---- mending: the truth first, then what is derived from it ---------------------------------

    def _on_acquire(self) -> None:
        """Run by whoever takes the write lock: finish a killed delete; restore a lost or damaged table
        before anything is derived from it (a catalog rebuilt from an empty table would lose every chat)."""
        self._finish_deletes()
        store = self.store
        suspect = store.damaged or store.created or (self.home / RESTORING).exists()
        if not suspect and catalog.table_stamps(store.path) is None:  # a table lost, or a new store
            store.connect()  # finds out which: a lost table is restored before anything reads it
            suspect = True
        if suspect:
            self._mend()

    def _mend(self, *, check_tables: bool = False, thorough: bool = False) -> list[str]:
        """Restore the two tables: a table that cannot be read goes back to its newest version that reads
        whole (LanceDB keeps versions until they are pruned), else starts again; lost conversations come
        back from the catalog (which holds every message), lost passages are derived again from the
        conversations (their vectors reused where stored, else awaiting embedding). `check_tables` scans
        the tables' ids (a cut data file fails it); `thorough` reads every value (`doctor`). Returns what
        could not be repaired, one line each."""
        store, unmended = self.store, []
        for name in TABLE_NAMES:
            reason = store.damaged.get(name)
            if reason is None and (check_tables or thorough):
                reason = store.check(name, full=thorough)
            if reason is None:
                continue
            if name == "conversations":  # from here until the catalog's chats are back: see `_mend`
                write_restoring(self.home / RESTORING, None)
            version = store.restore_readable(name)
            if version is not None:
                log.warning(
                    "the %s table was damaged (%s): restored to version %d, its newest whole one", name, reason, version
                )
                if name == "conversations":
                    write_restoring(self.home / RESTORING, version)
                continue
            moved = store.recreate(name, self.home / "damaged")
            kept = f"; its damaged files are kept in {moved}" if moved is not None else ""
            log.warning("the %s table was damaged (%s) and no version of it reads whole: rebuilt%s", name, reason, kept)
        marker = self.home / RESTORING
        if marker.exists():  # a restore a crash cut short: finished before anything reads the table
            lost = self._restore_from_catalog(newer_than=read_restoring(marker))
        elif "conversations" in store.created:
            lost = self._restore_from_catalog(newer_than=None)
        else:
            lost = None
        if lost:
            unmended.append(lost)
        elif thorough and store.conversation_count() == 0 and store.chunk_count() > 0:
            unmended.append(
                "the conversations table lost its chats and no copy of them can be read (the passages and the "
                "keyword index are kept): import your chats again (`pastchats import FILE`, `pastchats reindex` "
                "for agent logs)"
            )
        rederive = check_tables or thorough or bool(store.created) or marker.exists()
        store.created.clear()
        if rederive:
            self._rederive_stale()
        marker.unlink(missing_ok=True)
        return unmended

    def _restore_from_catalog(self, newer_than: int | None) -> str | None:
        """Write back into the conversations table the chats the catalog holds and the table lacks: every
        one when the table was started again (`newer_than` None), else when the catalog reflects a later
        version than the one the table was restored to (those it holds at another version too, and the
        table's chats the catalog no longer holds are deleted). Returns what could not be restored."""
        try:
            with catalog.Catalog.open(self.home) as chats:
                recorded = catalog.recorded_stamps(self.home) or {}
                later = newer_than is None or recorded.get("conversations", (0, 0, 0))[0] > newer_than
                if not later:
                    return None
                held = self.store.chat_versions()
                known = chats.chat_versions()
                wanted = [cid for cid, version in known.items() if held.get(cid, (None,))[0] != version]
                if newer_than is not None:
                    extra = sorted(set(held) - set(known))
                    if extra:
                        self.store.delete(extra)
                restored = 0
                for start in range(0, len(wanted), catalog.BATCH):
                    batch = list(chats.iter_conversations(ids=wanted[start : start + catalog.BATCH]))
                    self.store.write_conversations(batch, {c.id: c.fingerprint() for c in batch})
                    self.lock.touched.extend(c.id for c in batch)  # the catalog re-reads them after this hold
                    restored += len(batch)
        except catalog.CatalogMissing:
            new_store = not (self.home / catalog.FILE).exists() and self.keywords.doc_count() == 0
            if newer_than is None and not new_store and self.store.conversation_count() == 0:
                return (
                    "the conversations table was lost and the catalog cannot be read: import your chats again "
                    "(`pastchats import FILE`, `pastchats reindex` for agent logs)"
                )
            return None
        if restored:
            log.warning("restored %d chat(s) to the conversations table from the catalog", restored)
        return None

    def _rederive_stale(self) -> None:
        """Derive again the passages of every chat whose passages are missing or from another version
        of it: a lost or stale passages table heals from the conversations (which re-importing could not
        do: the chats themselves are unchanged). Passages whose chat is not in the table are kept: only
        a delete removes passages (through the journal), and a table that lost its chats must not take
        the passages and keyword documents with it."""
        chats = self.store.chat_versions()
        passages = self.store.passage_versions()
        stale = sorted(cid for cid, (version, count) in chats.items() if count and passages.get(cid) != {version})
        if not stale:
            return
        ingestor = self._ingestor()
        for start in range(0, len(stale), BATCH_CONVERSATIONS):
            present = ingestor.stored(stale[start : start + BATCH_CONVERSATIONS])
            if present:
                ingestor.write_derived(present)  # names them in the journal: the catalog re-reads them
        derived = self.store.passage_versions()
        healed = sum(1 for cid in stale if cid in derived)
        if healed:
            waiting = " (their passages await embedding where no vector was stored)" if self.embedder is None else ""
            log.warning("derived the passages of %d chat(s) again from the conversations table%s", healed, waiting)

    def _mend_derived(self) -> None:
        """The keyword index and the vector matrix, rebuilt from the tables when damaged or out of step;
        `store.json`'s size of vectors, corrected to the stored vectors'."""
        self._mend_keywords()
        if self.store.matrix_needs_build():  # first open after an upgrade, or the files were lost or cut
            log.info("building the vector matrix (%d passages)", self.store.build_matrix())
        if self._stored_meta().get("dim") not in (None, self.store.chunk_dim()):
            log.warning("store.json named another size of vectors than the stored ones: corrected")
            meta = self._stored_meta() | {"dim": self.store.chunk_dim()}
            (self.home / "store.json").write_text(json.dumps(meta), encoding="utf-8")

    def _mend_keywords(self) -> None:
        """Rebuild the keyword index from the conversations when it is damaged or out of step (no model
        needed); never from a conversations table that has lost the chats it holds."""
        if self.keywords.damage is not None or self.keywords.doc_count() != self.store.chunk_count():
            if self.keywords.damage is None and self.store.conversation_count() == 0:
                log.warning("the conversations table holds no chats: the keyword index is kept as it is")
            else:
                why = f"damaged ({self.keywords.damage})" if self.keywords.damage else "out of step with the store"
                log.warning("the keyword index is %s: rebuilding it from the conversations (no model needed)", why)
                if self.keywords.damage is not None:
                    self.keywords.reset()
                self._ingestor().rebuild_keywords()

    @contextmanager
    def _writing(self, timeout: float) -> Iterator[None]:
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
                if current and not ids and not self._rebuild_catalog and unchanged:
                    return  # nothing was written
                whole = not current or self._rebuild_catalog
                self._rebuild_catalog = False
                catalog.refresh(self.home, self.store, None if whole else ids)
            finally:
                self._shown = None
                del self.lock.touched[mark:]  # read by this hold alone: a long-lived server must not pile them up

    def _show_written(self) -> None:
        """Within a long write (an import's batches), bring the catalog in step with the chats written
        so far, so that readers show them batch by batch rather than when the whole import ends. Only
        where the catalog was in step when the hold began; otherwise the hold's end rebuilds it whole."""
        if self._shown is None or self._rebuild_catalog:
            return
        written = self.lock.touched[self._shown :]
        if written:
            catalog.refresh(self.home, self.store, written)
            self._shown += len(written)

    @staticmethod
    def _repair(ingestor: Ingestor) -> None:
        # Opening serves reads too: a repair that cannot finish (disk full, a file we may not write)
        # must not stop search or stats. The journal keeps the ids; the next write retries and reports.
        try:
            ingestor.repair()
        except Exception:
            log.exception("could not finish repairing the store; reads go on, the next write retries")

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
        """Upsert by id under the inter-process write lock; only changed text is re-embedded.

        `embed=False` makes the import fast: new passages are stored and keyword-searchable at once, and
        await their embedding (`embed_pending`) before the vector leg finds them. Ids starting with one
        of `add_only` are added but never replace a stored chat (`Ingestor.ingest`). `live`: a small
        write of live sync, kept small: the tables are not scanned for damage first, and compaction and
        the vector matrix's rebuild (seconds at 100k messages) are left to `compact`, which the watcher
        runs once changes pause (its first sync of a turn is a whole one).
        """
        ingestor = self._ingestor()

        def batch_done(done: IngestProgress) -> None:
            self._show_written()
            if progress is not None:
                progress(done)

        with self._writing(timeout=wait):
            self._mend(check_tables=not live)  # a cut data file would fail the import half way otherwise
            self._mend_keywords()
            try:
                ingestor.repair()
                stats = ingestor.ingest(conversations, batch_done, embed=embed, add_only=add_only, tidy=not live)
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                done = ingestor.stats
                raise DiskFull(
                    f"the disk holding {self.home} is full: {done.new} new and {done.updated} updated chat(s) were "
                    "imported before it filled and are searchable; the rest were not. Free some space, then run "
                    "the import again (it skips what is already stored)."
                ) from None
            try:
                self._write_meta()
            except OSError as exc:
                if not is_disk_full(exc):
                    raise
            return stats

    def pending_embeddings(self) -> int:
        """How many passages await their embedding.

        Such passages are stored and keyword-searchable, and left out of the vector leg until
        `embed_pending` embeds them (an import with `embed=False`, or one made without the model).
        """
        with self._catalog() as chats:
            return chats.pending_count()

    def switch_model(self, embedder: Embedder, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every passage with `embedder` (another model); keyword search works throughout.

        The passages are re-derived awaiting embedding (quick), then embedded in resumable batches.
        """
        with self._writing(timeout=-1):
            self.embedder, self.model_name, self.load_error = embedder, embedder.model_name, None
            self.engine.embedder = embedder
            ingestor = self._ingestor()
            ingestor.embedder = None  # written awaiting embedding; embedded below with progress
            self.store.reset_chunks(embedder.dim)
            ingestor.rederive_all()
            self._write_meta()
        return self.embed_pending(progress=progress)

    def embed_pending(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        batch: int = EMBED_BATCH,
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
        if self.embedder is None:
            raise StoreError(f"cannot embed without the embedding model ({self.load_error})")
        ingestor = self._ingestor()
        total = self.store.pending_count()
        done = 0
        tried: set[str] = set()  # each conversation once per call: a row that cannot be embedded never loops
        # The conversations waiting, read once (a read costs ~130 ms at 100k messages, ~350 batches)
        # and again when they are all done: what another process wrote between batches is found then,
        # and a chat it changed or deleted meanwhile is embedded as it is now, or skipped.
        waiting: deque[tuple[str, int]] = deque()
        while True:
            with self._writing(timeout=wait):
                if not waiting:
                    waiting.extend((cid, n) for cid, n in self.store.pending_owners().items() if cid not in tried)
                if not waiting:
                    release = getattr(self.embedder, "release_documents_model", None)
                    if release is not None:  # the model's document sessions are not needed for what follows
                        release()
                    idle_release.trim_free_memory()  # what the pass freed, back before the compaction's peak
                    if done and fold:  # fold the new vectors in: searches then need no LanceDB lookups
                        self._fold()
                    return done
                chosen, size = [], 0
                while waiting and size < batch:
                    cid, count = waiting.popleft()
                    chosen.append(cid)
                    size += count
                tried.update(chosen)
                before = self.store.pending_count(chosen)  # as it is now (~3 ms): another writer may have been
                ingestor.embed_some(chosen)
                self.lock.touched.extend(chosen)  # their passages' counts changed: the catalog re-reads them
                done += before - self.store.pending_count(chosen)
                if self.store.matrix_needs_build():  # the change log overflowed: keep vector search fast
                    self.store.build_matrix()
            if progress is not None:
                progress(min(done, total), total)
            if until is not None and until():
                return done

    def compact(self, *, wait: float = -1) -> None:
        """Fold what many small writes left (the live watcher's) into compacted tables and a rebuilt
        vector matrix, dropping the versions they replaced; the tables are checked first, as an
        import checks them."""
        with self._writing(timeout=wait):
            self._mend(check_tables=True)
            self._fold()

    def _fold(self) -> None:
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
        with self._writing(timeout=wait):  # taking the lock finishes any delete a kill interrupted
            existing = sorted(self.store.versions(ids))
            if existing:
                self.lock.commit_delete(existing)
                self._remove(existing)
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
        with self._writing(timeout=wait):
            self.store.prune()

    def unfinished_deletes(self) -> list[str]:
        """Conversations a delete committed to and whose caller may not have recorded them (it was
        killed): removed from every index, or about to be. `delete` them to take them off the list."""
        return sorted(set(self.lock.deleting()) | set(self.lock.deleted()))

    def _remove(self, ids: list[str]) -> None:
        self.store.delete(ids)
        self.keywords.replace(ids, [], {})

    def _finish_deletes(self) -> None:
        """Remove what a killed delete committed to (run by whoever takes the write lock)."""
        ids = self.lock.deleting()
        if not ids:
            return
        try:
            # INFO, not a warning: the quick `pastchats delete` leaves every removal to this
            log.info("finishing a delete of %d conversation(s)", len(ids))
            stamps = catalog.recorded_stamps(self.home)
            current = stamps is not None and stamps == catalog.table_stamps(self.store.path)
            self._remove(ids)
            if current:  # keep the catalog current (the write that follows would rebuild it whole)
                catalog.refresh(self.home, self.store, ids)
        except Exception:  # opening serves reads too; the journal keeps the ids for the next holder
            log.exception("could not finish an interrupted delete; the next write retries")
            return
        self.lock.finished_delete(ids, taken=False)

    # ---- reads -------------------------------------------------------------------------------

    def resolve_project(self, project: str | None) -> tuple[str, ...] | None:
        """Every stored spelling of `project`, matched case-insensitively (raises UnknownProject)."""
        with self._catalog() as chats:
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
        mode: SearchMode = "hybrid",
        fusion: Fusion = SHIPPED,
    ) -> SearchResult:
        """Hybrid search: strong chats first, then weak ones, each with its matches as question and answer.

        `after`/`before` select messages by their time (a chat is found through the part of it in the
        window); `project` matches case-insensitively.
        """
        self._follow_store()
        filters = Filters(project=self.resolve_project(project), source=source, after=after, before=before)
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
        with self._catalog() as chats:
            return recent_page(
                self._less_hidden(chats),
                n=n,
                sort_order=sort_order,
                before=before,
                after=after,
                project=project,
                source_name=source,
            )

    def activity(
        self, *, project: str | None = None, source: str | None = None
    ) -> list[tuple[datetime, str, str, str | None]]:
        """(updated_at, id, source, project) of every chat (in `project`, any case; from `source`):
        what a timeline counts."""
        with self._catalog() as chats:
            filters = Filters(project=project_spellings(chats, project), source=source)
            return self._less_hidden(chats).activity(filters)

    def names(self) -> tuple[list[str], list[str]]:
        """The sources and the projects chats have, as stored (a filter's choices), without `stats`' totals."""
        with self._catalog() as chats:
            source = self._less_hidden(chats)
            sources = sorted(source.column_counts("source"), key=str.casefold)
            return sources, sorted(source.column_counts("project"), key=str.casefold)

    def redacted_chats(self, limit: int = 50) -> list[tuple[str, dict[str, int]]]:
        """The chats with the most secrets redacted, most first, each with its counts by kind."""
        with self._catalog() as chats:
            return self._less_hidden(chats).redacted_chats(limit)

    def read_chat(self, uri: str, *, offset: int = 0, limit: int = 40, around: str | int | None = None) -> ChatPage:
        """A page of a conversation's messages; `around` (a message number from 1, or a message id)
        centres the page on that message."""
        self._follow_store()
        with self._catalog() as chats:
            return reading.read_chat(self._less_hidden(chats), uri, offset=offset, limit=limit, around=around)

    def get(self, uri: str) -> Conversation:
        """The whole stored conversation (raises NotFound)."""
        self._follow_store()
        with self._catalog() as chats:
            conversation = None if uri in self.deleted.ids() else chats.conversation(uri)
        if conversation is None:
            raise NotFound(f"no chat with uri {uri!r}")
        return conversation

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None, ids: list[str] | None = None
    ) -> Iterator[Conversation]:
        """Whole conversations in id order, streamed (`export`)."""
        hidden = self.deleted.ids()
        with self._catalog() as chats:
            for conversation in chats.iter_conversations(project=project, source=source, ids=ids):
                if conversation.id not in hidden:
                    yield conversation

    def stats(self) -> StoreStats:
        with self._catalog() as chats:
            return store_stats(self._less_hidden(chats), self.home, self.model_name)

    def is_empty(self) -> bool:
        with self._catalog() as chats:
            return chats.is_empty()

    @contextmanager
    def _catalog(self) -> Iterator[catalog.Catalog]:
        """The read model, as the last finished write left it; built first when there is none (a new
        store, a lost, damaged or older file). Reads never wait for a writer: when the lock is taken or
        the store is read-only, this process builds a private one from LanceDB and reads that."""
        with ExitStack() as stack:
            try:
                chats = stack.enter_context(catalog.Catalog.open(self.home))
            except catalog.CatalogMissing:
                if self.store.catalog_file is None or not self.store.catalog_file.exists():
                    try:
                        with self._writing(timeout=0):
                            self._rebuild_catalog = True
                    except (StoreBusy, StoreReadOnly) as exc:
                        log.info("reading from a private catalog (%s)", exc)
                        self.store.catalog_file = catalog.build_private(self.home, self.store)
                try:
                    chats = stack.enter_context(catalog.Catalog.open(self.home))
                    self.store.catalog_file = None
                except catalog.CatalogMissing:
                    if self.store.catalog_file is None:  # the rebuild failed: what LanceDB still holds
                        self.store.catalog_file = catalog.build_private(self.home, self.store)
                    chats = stack.enter_context(catalog.Catalog.open(self.home, file=self.store.catalog_file))
            yield chats

    def _less_hidden(self, chats: catalog.Catalog) -> catalog.Catalog | Hiding:
        """The catalog less the chats a delete committed to (one stat a read while there are none)."""
        hidden = self.deleted.ids()
        return Hiding(chats, hidden) if hidden else chats

    def close(self) -> None:
        """Nothing to flush (every write commits); kept so callers can treat the library as a resource."""
