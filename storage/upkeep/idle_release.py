"""Freed memory handed back to the system once searching stops for a moment.

A search allocates and frees a few MB of arrays (the matrix scan's scores and masks, the keyword
leg's and the tools' objects). glibc keeps freed chunks inside its heaps: only a heap's top is
trimmed on free, so after 40 searches of the 100k store 10-17 MB of the server's resident memory was
free memory. `malloc_trim(0)` returns it, but it took
1.6-13 ms: it runs here on a thread of its own once no search has started for `DELAY` seconds, never
on a search's path. Where the C library is not glibc there is nothing to trim.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable

DELAY = 1.0  # seconds without a search before the trim


def _glibc_trim() -> Callable[[], object] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], object] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # musl and others
        return None
    return lambda: trim(0)


def trim_free_memory() -> None:
    """Hand the C library's free memory back to the system now (no-op where it is not glibc)."""
    trim = _glibc_trim()
    if trim is not None:
        trim()


class IdleRelease:
    """Calls `release` once, `delay` seconds after the last of a run of `searched()` calls."""

    def __init__(self, release: Callable[[], object], delay: float = DELAY):
        self._release = release
        self._delay = delay
        self._wake = threading.Condition()
        self._last = 0.0
        self._pending = False
        self._thread: threading.Thread | None = None

    def searched(self) -> None:
        """Note a search (cheap: a lock and a clock read); the release waits until they stop."""
        with self._wake:
            self._last = time.monotonic()
            if self._pending:
                return
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pastchats-idle-release", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending:
                    self._wake.wait()
                while (left := self._last + self._delay - time.monotonic()) > 0:
                    self._wake.wait(left)
                self._pending = False
            self._release()


_trim = _glibc_trim()
_process = IdleRelease(_trim) if _trim is not None else None


def arrow_from_malloc() -> None:
    """Arrow's buffers from the C library's malloc from now on, not from its bundled mimalloc, which
    kept the pages of freed buffers: a serving process held 12 MB less at rest after 40 searches, and
    18 MB less right after 5 more. The trim returns them."""
    import pyarrow as pa

    if _process is not None:
        pa.set_memory_pool(pa.system_memory_pool())


def searched() -> None:
    """Note that this process searched: its freed memory goes back to the system once it idles."""
    if _process is not None:
        _process.searched()
