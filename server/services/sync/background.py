"""Live sync while the server runs: the agent logs followed as they are written (`server.services.sync.watching`).

It runs on its own daemon thread after the library has opened, so `initialize` and tool calls never
wait for it; reads never block on its writes. Of the servers sharing a store, one watches and the
others stand by to take over; a busy store (another process writing) just means the sync tries
again a moment later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from server.settings import Settings

if TYPE_CHECKING:
    from server.services.sync.watching import Watcher
    from storage.library import Library

logger = logging.getLogger("pastchats.sync")


class BackgroundSync:
    def __init__(self, settings: Settings, library: Callable[[], Library | None]):
        self._settings = settings
        self._library = library
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.watcher: Watcher | None = None

    def start(self) -> None:
        wanted = self._settings.sync or self._settings.store_uri  # the agent logs, or only the shared store
        if not wanted or (self._thread is not None and self._thread.is_alive()):
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pastchats-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and give the turn to another process: at once, or once the sync or embedding
        batch under way ends (a longer one goes on in the background and is finished by the next writer
        if the process exits meanwhile)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        from server.services.sync.watching import Watcher

        library = self._library()  # waits for the warm-up; None if the store could not open
        if library is None:
            return
        try:
            self.watcher = Watcher(self._settings, library, logs=self._settings.sync)
            self.watcher.run(self._stop)
        except Exception:  # the server goes on answering from what is stored
            logger.exception("following the agent logs failed; restart the server to try again")
