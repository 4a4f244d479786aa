"""Passages awaiting embeddings: embedded by the CLI with progress, or by the server in the background.

Chats imported while no model could load are keyword-searchable at once; the first command or server
that has the model embeds them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from server.progress import progress

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.library import Library

logger = logging.getLogger("pastchats.embedding")


def embed_with_progress(library: Library, *, show: bool = True) -> int:
    """Embed what awaits it, with done/total and an ETA on stderr; raises ClickException on failure."""
    from storage.library import StoreError

    if library.embedder is None or library.pending_embeddings() == 0:
        return 0
    with progress("embedding passages", "passages", enabled=show) as report:
        try:
            return library.embed_pending(progress=report)
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None


def embed_awaiting(settings: Settings) -> None:
    """After `model install`: embed the store's waiting passages, if it has any."""
    from server.cli.common import opened

    with opened(settings) as library:
        done = embed_with_progress(library)
    if done:
        click.echo(f"Embedded {done} passage(s) that awaited the model; search is hybrid again.")


def switch_model(settings: Settings, name: str) -> None:
    """`model use NAME`: re-embed every passage with the new model, with progress."""
    from server.cli.common import opened
    from server.settings import derived_models_dir
    from storage.embedding.embedder import EmbedderUnavailable, FastEmbedder
    from storage.library import StoreError

    try:
        embedder = FastEmbedder(name, settings.model_cache, derived_dir=derived_models_dir())
    except EmbedderUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    with opened(settings, model=False) as library, progress("re-embedding passages", "passages") as report:
        try:
            count = library.switch_model(embedder, report)
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"The store now uses {name}: {count} passage(s) embedded.")


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
        from storage.library import StoreError

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
