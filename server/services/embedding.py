"""Passages awaiting embeddings: embedded by the CLI with progress, or by the server in the background.

Chats imported while no model could load are keyword-searchable at once; the first command or server
that has the model embeds them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from server.services.progress import Report, progress

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.embedding.embedder import Embedder
    from storage.library import Library

logger = logging.getLogger("pastchats.embedding")


class EmbeddingCount:
    """Passages embedded so far, between `embed_pending`'s reports (one a committed batch of ~500):
    those committed, plus those the model has run since (an embedder that counts its runs, as
    `FastEmbedder.documents_embedded` does). Reading the count takes no turn at the model."""

    def __init__(self, embedder: object, total: int | None):
        self._embedder = embedder
        self.committed, self.total, self._ran_then = 0, total, self._ran()

    def _ran(self) -> int:
        return int(getattr(self._embedder, "documents_embedded", 0))

    def relay(self, report: Report | None) -> Callable[[int, int], None]:
        """`embed_pending`'s callback: notes each committed batch, and passes it on to `report`."""

        def committed(done: int, total: int) -> None:
            self.committed, self.total, self._ran_then = done, total, self._ran()
            if report is not None:
                report(done, total)

        return committed

    def now(self) -> tuple[int, int | None]:
        done = self.committed + self._ran() - self._ran_then
        return (done if self.total is None else min(done, self.total)), self.total


def embed_with_progress(
    library: Library, *, show: bool = True, stream: TextIO | None = None, every: float | None = None
) -> int:
    """Embed what awaits it, with done/total, elapsed time and an ETA on stderr (`stream`, a line every
    `every` seconds off a terminal: `server.services.progress`); a failure raises `StoreError`."""
    waiting = library.pending_embeddings() if library.embedder is not None else 0
    if not waiting:
        return 0
    count = EmbeddingCount(library.embedder, waiting)
    with progress("embedding passages", "passages", enabled=show, stream=stream, poll=count.now, every=every) as report:
        return library.embed_pending(progress=count.relay(report))


def embed_awaiting(library: Library, *, show: bool = True) -> tuple[int, bool]:
    """After `model install`: embed the store's waiting passages, if it has any. Returns how many, and
    whether the store had vectors before (its model went missing for a while). `show`: progress on
    stderr."""
    info = library.stats()
    return embed_with_progress(library, show=show), info.chunks > info.awaiting_embeddings


def load_model(settings: Settings, name: str) -> Embedder:
    """Model `name` from the settings' cache, ready to embed documents (raises `EmbedderUnavailable`)."""
    from server.settings import derived_models_dir
    from storage.embedding.embedder import FastEmbedder

    return FastEmbedder(name, settings.model_cache, derived_dir=derived_models_dir())


def switch_model(library: Library, embedder: Embedder, *, show: bool = True) -> int:
    """`model use NAME`: re-embed every passage with `embedder`, with progress; how many."""
    running = EmbeddingCount(embedder, None)  # the total is known at the first committed batch
    with progress("re-embedding passages", "passages", enabled=show, poll=running.now) as report:
        return library.switch_model(embedder, running.relay(report))


class BackgroundEmbedding:
    """The server's catch-up: once the library has opened, embed whatever awaits, off the request path."""

    def __init__(self, library: Callable[[], Library | None]):
        self._library = library
        self._thread: threading.Thread | None = None
        self.embedded = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pastchats-embedding", daemon=True)
            self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        library = self._library()
        if library is None or library.embedder is None:
            return
        from storage.errors import StoreError

        try:
            waiting = library.pending_embeddings()
            if waiting:
                logger.info("embedding %d passage(s) that awaited the model", waiting)
                self.embedded = library.embed_pending(wait=60)
                logger.info("embedded %d passage(s)", self.embedded)
        except StoreError as exc:  # another process is writing: it, or the next start, embeds them
            logger.info("passages awaiting embeddings left for later: %s", exc)
        except Exception:  # a failed catch-up must not end the server; the next start tries again
            logger.exception("embedding the waiting passages failed")
