"""Healing a store: finishing what a crashed writer left, restoring damaged tables, rebuilding what is
derived from them, re-embedding after a model change, migrating an older format, redacting again with
newer rules.

The truth first, then what is derived from it: a lost or damaged table is restored before anything is
derived from it (a catalog rebuilt from an empty table would lose every chat). Every function here runs
on a `Library` (`storage.library`), through the parts `Healed` names; all but `needs_repair` and
`heal` expect the caller to hold the write lock.
"""

from __future__ import annotations

import json
import logging
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from storage.embedding.embedder import Embedder
from storage.errors import StoreBusy, StoreError, StoreReadOnly
from storage.redaction import Redaction
from storage.stores import catalog
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import TABLE_NAMES, LanceStore
from storage.upkeep import migrations
from storage.upkeep.store_meta import STORE_FORMAT, read_meta, record_meta
from storage.writing.ingest import BATCH_CONVERSATIONS, Ingestor
from storage.writing.locks import WriteLock

log = logging.getLogger("storage.library")

# Present while the conversations table is being restored from the catalog (the version it was restored
# to, or null when it started again): a restore a crash cut short is finished by the next writer
# before anything, the catalog above all, is derived from the half-restored table.
RESTORING = "restoring.json"


class Healed(Protocol):
    """What healing reads and writes of a library."""

    home: Path
    store: LanceStore
    keywords: KeywordIndex
    lock: WriteLock
    embedder: Embedder | None
    model_name: str
    redaction: Redaction
    rebuild_catalog: bool  # set within a hold: the whole catalog is rebuilt when the hold ends

    def writing(self, timeout: float) -> AbstractContextManager[None]: ...

    def ingestor(self) -> Ingestor: ...


def write_restoring(path: Path, version: int | None) -> None:
    path.write_text(json.dumps({"newer_than": version}), encoding="utf-8")


def read_restoring(path: Path) -> int | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("newer_than")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def heal(library: Healed) -> None:
    """Finish what a crashed writer left, make the tables and every derived structure whole again
    (`mend`), migrate an older format, re-embed after a model change. Never fails the open: reads
    answer from what is intact whatever cannot be repaired now."""
    try:
        with library.writing(timeout=0):
            mend(library, check_tables=True)
            _migrate_and_reembed(library)
            mend_derived(library)
            if _older_format(library.home) is None:  # redacted as today's chats are (format 1-2 waits for the model)
                redact_stored(library, library.ingestor())
            library.store.prune()  # what the last writes superseded, once no reader can still need it
    except StoreBusy:
        log.info("another process is writing; it will finish any repair")
    except StoreReadOnly:
        log.info("the store in %s is read-only: reading what is there, repairing nothing", library.home)
    except StoreError as exc:  # damage no repair could undo now: reads go on from what is intact
        log.warning("%s", exc)


def _migrate_and_reembed(library: Healed) -> None:
    ingestor = library.ingestor() if library.embedder is not None else None
    if migrations.migrate(library.home, library.store, ingestor):
        library.rebuild_catalog = True
    if library.embedder is None or ingestor is None:
        return
    stored_model = read_meta(library.home).get("model")
    if stored_model not in (None, library.embedder.model_name) or library.store.chunk_dim() != library.embedder.dim:
        log.warning("embedding model changed to %s: re-embedding", library.embedder.model_name)
        ingestor.reembed_all()
    finish_writes(ingestor)
    write_meta(library)


def needs_repair(library: Healed) -> bool:
    """Whether opening has work to do that reads need (see `Library.needs_repair`), answered from the
    files beside LanceDB, without opening it."""
    if library.lock.pending() or library.lock.deleting():
        return True
    if derived_damage(library):
        return True
    meta = read_meta(library.home)
    if meta.get("format") != STORE_FORMAT or needs_redaction(library):
        return True
    embedder = library.embedder
    if embedder is not None and (meta.get("model"), meta.get("dim")) != (library.model_name, embedder.dim):
        return True
    stamps = catalog.table_stamps(library.store.path)
    if stamps is None or library.store.matrix.needs_build(stamps["chunks"][0]):
        return True
    with catalog.Catalog.read(library.home) as current:
        chunks = None if current is None else current.counts()[2]
    return chunks is None or library.keywords.doc_count() != chunks


def derived_damage(library: Healed) -> list[str]:
    """The derived structures found damaged, each with why (from the files, without LanceDB)."""
    found = []
    if library.keywords.damage is not None:
        found.append(f"the keyword index ({library.keywords.damage})")
    if (matrix := library.store.matrix.damage()) is not None:
        found.append(f"the vector matrix ({matrix})")
    if (catalog_damage := catalog.damage(library.home / catalog.FILE)) is not None:
        found.append(f"the catalog ({catalog_damage})")
    return found


def _older_format(home: Path) -> int | None:
    """The stored format when it is older than this pastchats' (None when current or unrecorded)."""
    found = read_meta(home).get("format")
    return found if isinstance(found, int) and found < STORE_FORMAT else None


def write_meta(library: Healed) -> None:
    """Record what the store now holds: its format and model, and that chats written with redaction
    off may hold secrets (so turning it on again redacts them)."""
    stored = read_meta(library.home)
    meta = stored | ({"redaction": "off"} if not library.redaction.enabled else {})
    if library.embedder is not None:
        meta |= {"format": STORE_FORMAT, "model": library.embedder.model_name, "dim": library.embedder.dim}
    elif not stored:
        # Without a loaded model, only a missing record is written: the model on record stays the
        # one the vectors come from (a command run with another PASTCHATS_MODEL must not change it).
        meta |= {"format": STORE_FORMAT, "model": library.model_name, "dim": library.store.dim}
    if meta != stored:
        (library.home / "store.json").write_text(json.dumps(meta), encoding="utf-8")


def needs_redaction(library: Healed) -> bool:
    """Whether stored chats may hold what this redaction would take out: written before redaction,
    with older rules or a longer allow list. (Turning redaction off never rewrites what was redacted.)"""
    return library.redaction.enabled and read_meta(library.home).get("redaction") != library.redaction.stamp


def follow_redaction(library: Healed) -> bool:
    """Redact what another process wrote unredacted or with other rules (a running server, before it
    answers again); False while it cannot yet (the store is busy: a writer is still at work)."""
    if not needs_redaction(library):
        return True
    log.warning("%s holds chats another process wrote without today's redaction: redacting them", library.home)
    try:
        with library.writing(timeout=0):
            redact_stored(library, library.ingestor())
    except StoreBusy:
        log.info("another process is writing; redacting once it lets go of the store")
        return False
    except StoreError as exc:  # read-only, or damage: reads go on, as when the store was opened
        log.warning("could not redact the store in %s now: %s", library.home, exc)
    return True


def redact_stored(library: Healed, ingestor: Ingestor) -> None:
    """Redact what the store holds with today's rules, once; without the model, changed passages
    wait for their embedding (keyword-searchable at once)."""
    if not needs_redaction(library):
        return
    if library.store.conversation_ids():
        log.warning("checking the chats stored in %s for secrets (once, with the current rules)", library.home)
        stats = ingestor.redact_stored(embed=library.embedder is not None)
        # The versions before the pass still hold the secrets: gone now unless a reader is mid-query,
        # else at the next write or open once it cannot be (`LanceStore.prune`).
        library.store.prune()
        if stats.redacted:
            counts = ", ".join(f"{kind} {n}" for kind, n in stats.redacted.most_common())
            log.warning("redacted %d secret(s) in %d chat(s): %s", stats.redacted.total(), stats.written, counts)
    if ingestor.quarantine.rewrite(library.redaction.redact_record):  # chats set aside hold no secret either
        log.warning("redacted secrets in the chats set aside in %s", ingestor.quarantine.directory)
    record_meta(library.home, redaction=library.redaction.stamp)


def finish_writes(ingestor: Ingestor) -> None:
    """Finish the writes a crash left in the journal. Opening serves reads too: a repair that cannot
    finish (disk full, a file we may not write) must not stop search or stats. The journal keeps the
    ids; the next write retries and reports."""
    try:
        ingestor.repair()
    except Exception:
        log.exception("could not finish repairing the store; reads go on, the next write retries")


def remove(library: Healed, ids: list[str]) -> None:
    """Take conversations out of the tables and the keyword index (the catalog follows the hold)."""
    library.store.delete(ids)
    library.keywords.replace(ids, [], {})


def finish_deletes(library: Healed) -> None:
    """Remove what a killed delete committed to (run by whoever takes the write lock)."""
    ids = library.lock.deleting()
    if not ids:
        return
    try:
        # INFO, not a warning: the quick `pastchats delete` leaves every removal to this
        log.info("finishing a delete of %d conversation(s)", len(ids))
        stamps = catalog.recorded_stamps(library.home)
        current = stamps is not None and stamps == catalog.table_stamps(library.store.path)
        remove(library, ids)
        if current:  # keep the catalog current (the write that follows would rebuild it whole)
            catalog.refresh(library.home, library.store, ids)
    except Exception:  # opening serves reads too; the journal keeps the ids for the next holder
        log.exception("could not finish an interrupted delete; the next write retries")
        return
    library.lock.finished_delete(ids, taken=False)


def on_acquire(library: Healed) -> None:
    """Run by whoever takes the write lock: finish a killed delete; restore a lost or damaged table
    before anything is derived from it (a catalog rebuilt from an empty table would lose every chat)."""
    finish_deletes(library)
    store = library.store
    suspect = store.damaged or store.created or (library.home / RESTORING).exists()
    if not suspect and catalog.table_stamps(store.path) is None:  # a table lost, or a new store
        store.connect()  # finds out which: a lost table is restored before anything reads it
        suspect = True
    if suspect:
        mend(library)


def mend(library: Healed, *, check_tables: bool = False, thorough: bool = False) -> list[str]:
    """Restore the two tables: a table that cannot be read goes back to its newest version that reads
    whole (LanceDB keeps versions until they are pruned), else starts again; lost conversations come
    back from the catalog (which holds every message), lost passages are derived again from the
    conversations (their vectors reused where stored, else awaiting embedding). `check_tables` scans
    the tables' ids (a cut data file fails it); `thorough` reads every value (`doctor`). Returns what
    could not be repaired, one line each."""
    store, unmended = library.store, []
    for name in TABLE_NAMES:
        reason = store.damaged.get(name)
        if reason is None and (check_tables or thorough):
            reason = store.check(name, full=thorough)
        if reason is not None:
            _restore_table(library, name, reason)
    marker = library.home / RESTORING
    if marker.exists():  # a restore a crash cut short: finished before anything reads the table
        lost = _restore_from_catalog(library, newer_than=read_restoring(marker))
    elif "conversations" in store.created:
        lost = _restore_from_catalog(library, newer_than=None)
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
        _rederive_stale(library)
    marker.unlink(missing_ok=True)
    return unmended


def _restore_table(library: Healed, name: str, reason: str) -> None:
    """A damaged table back to its newest version that reads whole, else started again (its files kept)."""
    store = library.store
    if name == "conversations":  # from here until the catalog's chats are back: see `mend`
        write_restoring(library.home / RESTORING, None)
    version = store.restore_readable(name)
    if version is not None:
        log.warning(
            "the %s table was damaged (%s): restored to version %d, its newest whole one", name, reason, version
        )
        if name == "conversations":
            write_restoring(library.home / RESTORING, version)
        return
    moved = store.recreate(name, library.home / "damaged")
    kept = f"; its damaged files are kept in {moved}" if moved is not None else ""
    log.warning("the %s table was damaged (%s) and no version of it reads whole: rebuilt%s", name, reason, kept)


def _restore_from_catalog(library: Healed, newer_than: int | None) -> str | None:
    """Write back into the conversations table the chats the catalog holds and the table lacks: every
    one when the table was started again (`newer_than` None), else when the catalog reflects a later
    version than the one the table was restored to (those it holds at another version too, and the
    table's chats the catalog no longer holds are deleted). Returns what could not be restored."""
    store = library.store
    try:
        with catalog.Catalog.open(library.home) as chats:
            recorded = catalog.recorded_stamps(library.home) or {}
            later = newer_than is None or recorded.get("conversations", (0, 0, 0))[0] > newer_than
            if not later:
                return None
            held = store.chat_versions()
            known = chats.chat_versions()
            wanted = [cid for cid, version in known.items() if held.get(cid, (None,))[0] != version]
            if newer_than is not None:
                extra = sorted(set(held) - set(known))
                if extra:
                    store.delete(extra)
            restored = 0
            for start in range(0, len(wanted), catalog.BATCH):
                batch = list(chats.iter_conversations(ids=wanted[start : start + catalog.BATCH]))
                store.write_conversations(batch, {c.id: c.fingerprint() for c in batch})
                library.lock.touched.extend(c.id for c in batch)  # the catalog re-reads them after this hold
                restored += len(batch)
    except catalog.CatalogMissing:
        new_store = not (library.home / catalog.FILE).exists() and library.keywords.doc_count() == 0
        if newer_than is None and not new_store and store.conversation_count() == 0:
            return (
                "the conversations table was lost and the catalog cannot be read: import your chats again "
                "(`pastchats import FILE`, `pastchats reindex` for agent logs)"
            )
        return None
    if restored:
        log.warning("restored %d chat(s) to the conversations table from the catalog", restored)
    return None


def _rederive_stale(library: Healed) -> None:
    """Derive again the passages of every chat whose passages are missing or from another version
    of it: a lost or stale passages table heals from the conversations (which re-importing could not
    do: the chats themselves are unchanged). Passages whose chat is not in the table are kept: only
    a delete removes passages (through the journal), and a table that lost its chats must not take
    the passages and keyword documents with it."""
    chats = library.store.chat_versions()
    passages = library.store.passage_versions()
    stale = sorted(cid for cid, (version, count) in chats.items() if count and passages.get(cid) != {version})
    if not stale:
        return
    ingestor = library.ingestor()
    for start in range(0, len(stale), BATCH_CONVERSATIONS):
        present = ingestor.stored(stale[start : start + BATCH_CONVERSATIONS])
        if present:
            ingestor.write_derived(present)  # names them in the journal: the catalog re-reads them
    derived = library.store.passage_versions()
    healed = sum(1 for cid in stale if cid in derived)
    if healed:
        waiting = " (their passages await embedding where no vector was stored)" if library.embedder is None else ""
        log.warning("derived the passages of %d chat(s) again from the conversations table%s", healed, waiting)


def mend_derived(library: Healed) -> None:
    """The keyword index and the vector matrix, rebuilt from the tables when damaged or out of step;
    `store.json`'s size of vectors, corrected to the stored vectors'."""
    mend_keywords(library)
    store = library.store
    if store.matrix_needs_build():  # first open after an upgrade, or the files were lost or cut
        log.info("building the vector matrix (%d passages)", store.build_matrix())
    if read_meta(library.home).get("dim") not in (None, store.chunk_dim()):
        log.warning("store.json named another size of vectors than the stored ones: corrected")
        record_meta(library.home, dim=store.chunk_dim())


def mend_keywords(library: Healed) -> None:
    """Rebuild the keyword index from the conversations when it is damaged or out of step (no model
    needed); never from a conversations table that has lost the chats it holds."""
    keywords, store = library.keywords, library.store
    if keywords.damage is None and keywords.doc_count() == store.chunk_count():
        return
    if keywords.damage is None and store.conversation_count() == 0:
        log.warning("the conversations table holds no chats: the keyword index is kept as it is")
        return
    why = f"damaged ({keywords.damage})" if keywords.damage else "out of step with the store"
    log.warning("the keyword index is %s: rebuilding it from the conversations (no model needed)", why)
    if keywords.damage is not None:
        keywords.reset()
    library.ingestor().rebuild_keywords()
