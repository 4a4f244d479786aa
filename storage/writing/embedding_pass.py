"""Passages awaiting their embedding, embedded in resumable batches under the write lock, which is let
go between batches so imports and syncs interleave (`Library.embed_pending`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from storage.embedding.embedder import Embedder
from storage.errors import StoreError
from storage.stores.lance_store import LanceStore
from storage.upkeep import idle_release
from storage.writing.ingest import Ingestor
from storage.writing.locks import WriteLock


class Library(Protocol):
    """What an embedding pass uses of `storage.library.Library`."""

    embedder: Embedder | None
    load_error: str | None
    store: LanceStore
    lock: WriteLock

    def ingestor(self, live: bool = False) -> Ingestor: ...
    def writing(self, timeout: float) -> AbstractContextManager[None]: ...
    def fold(self) -> None: ...


EMBED_BATCH = 512  # passages embedded per commit: ~10-30 s of model time here


def embed_pending(
    library: Library,
    *,
    progress: Callable[[int, int], None] | None,
    batch: int,
    wait: float,
    until: Callable[[], bool] | None,
    fold: bool,
) -> int:
    """Embed every passage of `library` that awaits it (as `Library.embed_pending` says); how many."""
    if library.embedder is None:
        raise StoreError(f"cannot embed without the embedding model ({library.load_error})")
    ingestor = library.ingestor()
    total = library.store.pending_count()
    done = 0
    tried: set[str] = set()  # each conversation once per call: a row that cannot be embedded never loops
    # The conversations waiting, read once (a read costs ~130 ms at 100k messages, ~350 batches)
    # and again when they are all done: what another process wrote between batches is found then,
    # and a chat it changed or deleted meanwhile is embedded as it is now, or skipped.
    waiting: deque[tuple[str, int]] = deque()
    while True:
        with library.writing(timeout=wait):
            if not waiting:
                waiting.extend((cid, n) for cid, n in library.store.pending_owners().items() if cid not in tried)
            if not waiting:
                release = getattr(library.embedder, "release_documents_model", None)
                if release is not None:  # the model's document sessions are not needed for what follows
                    release()
                idle_release.trim_free_memory()  # what the pass freed, back before the compaction's peak
                if done and fold:  # fold the new vectors in: searches then need no LanceDB lookups
                    library.fold()
                return done
            chosen, size = [], 0
            while waiting and size < batch:
                cid, count = waiting.popleft()
                chosen.append(cid)
                size += count
            tried.update(chosen)
            before = library.store.pending_count(chosen)  # as it is now (~3 ms): another writer may have been
            ingestor.embed_some(chosen)
            library.lock.touched.extend(chosen)  # their passages' counts changed: the catalog re-reads them
            done += before - library.store.pending_count(chosen)
            if library.store.matrix_needs_build():  # the change log overflowed: keep vector search fast
                library.store.build_matrix()
        if progress is not None:
            progress(min(done, total), total)
        if until is not None and until():
            return done
