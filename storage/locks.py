"""One writer at a time across processes, and a journal that lets the next writer repair a crash.

Reads never take the lock. A write names the conversations it is about to touch in the journal before it
starts and clears it when every index has committed; whoever next holds the lock re-derives those
conversations from the truth (the `conversations` table), so a kill at any point heals.

Deletes have their own two lists in the same file (`journal.json`):

- `deleting`: conversations a delete has committed to removing; their rows may still be in some index.
  Whoever next holds the lock (any command, any server: `on_acquire`) removes them first.
- `deleted`: removed by such a finish rather than by the delete itself, which may have been killed
  before its caller recorded them (the sync state's forgotten list, a layer above). They stay here
  until a caller takes them (`Library.unfinished_deletes`, `Library.delete`).

Writing a conversation again (`begin`) drops it from both lists: a deliberate re-import outranks a
delete that never finished.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks here; cleanup keeps its grace period instead
    fcntl = None  # type: ignore[assignment]

from filelock import FileLock, Timeout

from storage.errors import StoreBusy
from storage.journal import FILE as JOURNAL
from storage.journal import load_journal, save_journal
from storage.owner_only import FILE_MODE


class WriteLock:
    def __init__(self, home: Path, on_acquire: Callable[[], None] | None = None):
        self._lock = FileLock(str(home / "write.lock"), mode=FILE_MODE)
        self.journal_path = home / JOURNAL
        # The ids named by `begin` during the current holds: what they wrote, for the catalog to re-read
        # (each hold drops its own when it ends: `Library._writing`).
        self.touched: list[str] = []
        # Run by whoever takes the lock (not by nested holds): finishes what a killed writer committed to.
        self.on_acquire = on_acquire

    @contextmanager
    def hold(self, timeout: float = -1) -> Iterator[None]:
        """Wait for the lock (forever by default; 0 = don't wait). Raises StoreBusy on timeout."""
        try:
            self._lock.acquire(timeout=timeout)
        except Timeout:
            raise StoreBusy from None
        try:
            if self.on_acquire is not None and self._lock.lock_counter == 1:
                self.on_acquire()
            yield
        finally:
            self._lock.release()

    def pending(self) -> list[str]:
        """Conversations a write began and did not finish (to re-derive from the truth)."""
        return self._load()["conversations"]

    def begin(self, ids: list[str]) -> None:
        self.touched.extend(ids)
        data = self._load()
        written = set(ids)
        data["conversations"] = sorted(set(data["conversations"]) | written)
        data["deleting"] = [cid for cid in data["deleting"] if cid not in written]
        data["deleted"] = [cid for cid in data["deleted"] if cid not in written]
        self._save(data)

    def done(self, ids: list[str] | None = None) -> None:
        """Every index has committed these ids (all, by default); the rest stay for the next repair."""
        data = self._load()
        data["conversations"] = [] if ids is None else sorted(set(data["conversations"]) - set(ids))
        self._save(data)

    # ---- deletes ---------------------------------------------------------------------------------

    def deleting(self) -> list[str]:
        """Conversations a delete committed to removing whose rows may still be somewhere."""
        return self._load()["deleting"]

    def deleted(self) -> list[str]:
        """Conversations removed on a killed delete's behalf, not yet taken by a caller."""
        return self._load()["deleted"]

    def commit_delete(self, ids: Iterable[str]) -> None:
        """The point of no return of a delete: from here on, the next lock holder removes them."""
        ids = list(ids)
        self.touched.extend(ids)  # what the catalog re-reads after this hold
        data = self._load()
        data["deleting"] = sorted(set(data["deleting"]) | set(ids))
        self._save(data)

    def finished_delete(self, ids: Iterable[str], *, taken: bool) -> None:
        """Every index has dropped these ids. `taken`: the caller has recorded them wherever it needs
        to (else they move to `deleted`, for the caller's layer to take later)."""
        gone = set(ids)
        data = self._load()
        data["deleting"] = [cid for cid in data["deleting"] if cid not in gone]
        if taken:
            data["deleted"] = [cid for cid in data["deleted"] if cid not in gone]
        else:
            data["deleted"] = sorted(set(data["deleted"]) | gone)
        self._save(data)

    # ---- the file ----------------------------------------------------------------------------------

    def _load(self) -> dict[str, list[str]]:
        return load_journal(self.journal_path)

    def _save(self, data: dict[str, list[str]]) -> None:
        save_journal(str(self.journal_path), data)


class Readers:
    """Who is in the middle of reading the tables, across processes, for old-version cleanup.

    Each read holds a shared advisory lock on one file for its duration (its own open file, so that
    threads of one process count separately). Cleanup asks for the exclusive lock without waiting: if
    it gets it, nobody is mid-read, and every version but the newest can go at once; if not, someone
    may still be reading an older version, and cleanup keeps the grace period. A read that starts
    while cleanup holds the lock begins on the newest version, which cleanup never deletes.
    """

    # A read that finds cleanup at work waits this long for it before going ahead unlocked.
    WAIT = 2.0

    def __init__(self, path: Path):
        self.path = path

    @contextmanager
    def reading(self) -> Iterator[None]:
        fd = self._open()
        try:
            if fd is not None:
                self._shared(fd)
            yield
        finally:
            if fd is not None:
                os.close(fd)  # closing the file releases its lock

    @contextmanager
    def alone(self) -> Iterator[bool]:
        """True while no read is under way anywhere (and none starts a lock-holding read meanwhile)."""
        fd = self._open()
        if fd is None:
            yield False
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
            else:
                yield True
        finally:
            os.close(fd)

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError:  # a read-only store: nobody can clean it up either
            return None

    def _shared(self, fd: int) -> None:
        deadline = time.monotonic() + self.WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # cleanup is slow: read the newest version anyway (reads retry a lost file)
                time.sleep(0.005)
