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

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks here; cleanup keeps its grace period instead
    fcntl = None  # type: ignore[assignment]

from filelock import FileLock, Timeout

from storage.errors import StoreBusy, StoreReadOnly, is_read_only
from storage.owner_only import FILE_MODE
from storage.writing.journal import FILE as JOURNAL
from storage.writing.journal import load_journal, save_journal

log = logging.getLogger(__name__)

OWNER = "write.owner"  # who holds the write lock: pid, command, since (read by whoever waits for it)
# A writer that cannot have the lock at once says, within this long, what it waits for and for whom.
NOTICE_AFTER = 0.5


def lock_holder(home: Path) -> str | None:
    """Who holds the write lock, as a waiting user needs it: pid, command, since when, and whether it
    is stopped. None when unknown (an older pastchats, or the holder has just taken it)."""
    try:
        owner = json.loads((home / OWNER).read_text(encoding="utf-8"))
        pid = int(owner["pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    state = _process_state(pid)
    if state is None:
        return None  # the owner file of a writer that has gone: the lock is someone else's now
    since = str(owner.get("since", "?"))
    described = f"pid {pid}, `{owner.get('command', '?')}`, since {since}"
    return described + (", stopped (suspended)" if state in ("T", "t") else "")


def process_running(pid: int) -> bool:
    return _process_state(pid) is not None


def _process_state(pid: int) -> str | None:
    """'R', 'S', 'T' (stopped)... from /proc; '?' where there is no /proc; None when it is not running."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass
        return "?"


def waiting_notice(home: Path) -> str:
    """What a writer that waits says: for what, for whom, and what the user can do."""
    holder = lock_holder(home)
    if holder is None:
        return (
            f"waiting for another pastchats process to finish writing to {home}; press Ctrl-C to stop waiting "
            "(nothing is lost)"
        )
    pid = holder.split(",", 1)[0].removeprefix("pid ")
    if holder.endswith("stopped (suspended)"):
        step = f"resume it with `kill -CONT {pid}`, or end it with `kill {pid}` (the next command finishes its work)"
    else:
        step = f"if it is stuck, end it with `kill {pid}` (the next command finishes its work), or press Ctrl-C"
    return f"waiting for the store's write lock in {home}, held by {holder}: {step}"


class WriteLock:
    def __init__(self, home: Path, on_acquire: Callable[[], None] | None = None):
        self.home = home
        self._lock = FileLock(str(home / "write.lock"), mode=FILE_MODE)
        self.journal_path = home / JOURNAL
        # The ids named by `begin` during the current holds: what they wrote, for the catalog to re-read
        # (each hold drops its own when it ends: `Library._writing`).
        self.touched: list[str] = []
        # Run by whoever takes the lock (not by nested holds): finishes what a killed writer committed to.
        self.on_acquire = on_acquire
        # Told once when a writer has waited `NOTICE_AFTER` for the lock (the CLI prints it on stderr).
        self.on_wait: Callable[[str], None] = lambda notice: log.warning("%s", notice)

    @contextmanager
    def hold(self, timeout: float = -1) -> Iterator[None]:
        """Wait for the lock (forever by default; 0 = don't wait). Raises StoreBusy on timeout, naming
        the holder, and StoreReadOnly when the store's folder cannot be written."""
        self._acquire(timeout)
        try:
            if self._lock.lock_counter == 1:
                self._record_owner()
                if self.on_acquire is not None:
                    self.on_acquire()
            yield
        finally:
            self._lock.release()

    def _acquire(self, timeout: float) -> None:
        deadline = None if timeout < 0 else time.monotonic() + timeout
        first = timeout if 0 <= timeout <= NOTICE_AFTER else NOTICE_AFTER
        try:
            try:
                self._lock.acquire(timeout=first)
                return
            except Timeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise StoreBusy(lock_holder(self.home)) from None
            self.on_wait(waiting_notice(self.home))
            rest = -1 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                self._lock.acquire(timeout=rest)
            except Timeout:
                raise StoreBusy(lock_holder(self.home)) from None
        except OSError as exc:
            if is_read_only(exc):
                raise StoreReadOnly(self.home) from None
            raise

    def _record_owner(self) -> None:
        """Say who holds the lock, for a writer that waits (best effort: the lock itself is what counts)."""
        command = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]])[:200]
        owner = {"pid": os.getpid(), "command": command, "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        tmp = self.home / f".{OWNER}.{os.getpid()}.tmp"
        try:
            tmp.write_text(json.dumps(owner), encoding="utf-8")
            os.replace(tmp, self.home / OWNER)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

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
