"""Opening the library (LanceDB, Tantivy, the embedding model) on a background thread, once.

It takes seconds, so nothing waits for it that need not: `initialize` is answered without it, and a
tool call waits for this one outcome.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio.to_thread

from storage.errors import PastchatsError, StoreError
from tools.errors import tool_error

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.server")

# Objects the cyclic collector lets pile up before it looks at the young ones (Python's default: 700).
# A search briefly holds ~1-2 thousand (its candidates), so at 700 every search paid ~3 young
# collections and now and then a full one over everything start-up left (450-700 ms at load 11-14);
# memory is freed by reference counting either way. At 10,000, 120 searches on the 100k store ran none.
SERVING_GC_THRESHOLD = 10_000


def serving_collector() -> None:
    """Once the library is open (start-up's garbage collected as usual), collect for serving."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, SERVING_GC_THRESHOLD), middle, old)


class WarmLibrary:
    """Opens the library once, on a background thread; every tool call awaits the same outcome."""

    def __init__(self, open_library: Callable[[], Library]):
        self._open = open_library
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._library: Library | None = None
        self._error: str | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="pastchats-warm-up", daemon=True)
                self._thread.start()

    def _load(self) -> None:
        try:
            self._library = self._open()
            serving_collector()
            logger.info("library ready")
        except Exception as exc:
            if isinstance(exc, PastchatsError):
                logger.error("cannot open the pastchats store: %s", exc)
                self._error = str(exc)
            else:
                logger.exception("cannot open the pastchats store")
                self._error = (
                    f"an unexpected {type(exc).__name__}; the server log has the details, and "
                    "`pastchats doctor` in a terminal checks the store"
                )
        finally:
            self._done.set()

    def wait(self) -> Library | None:
        """Block until the warm-up ends (for background threads); None if the store did not open."""
        self.start()
        self._done.wait()
        return self._library

    async def get(self) -> Library:
        self.start()
        if not self._done.is_set():
            await anyio.to_thread.run_sync(self._done.wait, abandon_on_cancel=True)
        if self._library is None:
            raise tool_error(StoreError(f"The pastchats store could not be opened: {self._error}. Tell the user."))
        return self._library
