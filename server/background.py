"""Background sync while the server runs: once at start, then every `sync_interval` seconds.

It runs on its own daemon thread after the library has opened, so `initialize` and tool calls never
wait for it; reads never block on its writes. A busy store (another process writing) just means the
next round tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from server.settings import Settings
from server.wiring import syncer_for

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.sync")


class BackgroundSync:
    def __init__(self, settings: Settings, library: Callable[[], Library | None]):
        self._settings = settings
        self._library = library
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0

    def start(self) -> None:
        if not self._settings.sync or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="pastchats-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        library = self._library()  # waits for the warm-up; None if the store could not open
        if library is None:
            return
        while not self._stop.is_set():
            self.run_once(library)
            if self._settings.sync_interval == 0 or self._stop.wait(self._settings.sync_interval):
                return

    def run_once(self, library: Library) -> None:
        try:
            report = syncer_for(self._settings, library).run_once()
        except Exception:  # a failed round must not end the server; the next round tries again
            logger.exception("background sync failed")
            return
        finally:
            self.rounds += 1
        if report.not_run:
            logger.info("background sync skipped: %s", report.not_run)
        else:
            logger.info("background sync: %s", report.text().replace("\n", "; "))
        self.embed_pending(library)

    @staticmethod
    def embed_pending(library: Library) -> None:
        """Embed passages that were stored awaiting it (they are keyword-searchable meanwhile)."""
        from storage.library import StoreError

        if library.embedder is None:
            return
        try:
            if library.pending_embeddings():
                logger.info("embedded %d waiting passages", library.embed_pending(wait=0))
        except StoreError as exc:  # another process is writing: the next round goes on
            logger.info("embedding waiting passages paused: %s", exc)
        except Exception:
            logger.exception("embedding waiting passages failed")
