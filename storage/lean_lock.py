"""The write lock (`storage.locks.WriteLock`) taken with the standard library alone, for the quick
`delete` and `forget` (`server.cli_delete`): filelock costs ~0.1 s to import.

filelock locks `write.lock` with `fcntl.flock` on Unix; this takes the same kind of lock on the same
file, so the two exclude each other across processes. Where that cannot be relied on (no fcntl, a
store we may not write) `hold` answers None and the caller takes the full path instead.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # Windows: filelock uses another mechanism there; the full path answers
    fcntl = None  # type: ignore[assignment]

FILE = "write.lock"


def acquire(home: str) -> int | None:
    """Wait for the write lock and return its descriptor (close it to let go); None: cannot be sure."""
    if fcntl is None:
        return None
    path = os.path.join(home, FILE)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # never O_TRUNC: the holder's file
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # A lock on a file unlinked meanwhile guards no name: open it again.
            if os.fstat(fd).st_nlink > 0:
                return fd
        except OSError:
            os.close(fd)
            return None
        os.close(fd)


def release(fd: int) -> None:
    os.close(fd)  # closing the descriptor releases its flock
