"""Live memory: the agents' logs followed as they are written, by one process per store.

Every process that syncs (each client's `pastchats serve`, `pastchats sync --watch`) asks for the
store's watch turn: an OS lock on `<home>/watch.lock` (filelock: `flock`, `LockFileEx`), which the
operating system lets go when its holder exits or is killed, so a `kill -9` frees it. The holder
watches the agents' folders with watchfiles (Rust's notify: inotify, FSEvents,
ReadDirectoryChangesW), each real folder on its own so that no symbolic link leads it out of them,
or polls them where file events are unavailable (a network filesystem, a container's host mount, or
events that fail to start), and after each burst of changes runs the one
sync there is (`Syncer.run_once`): the new text is keyword-searchable when it returns, and its
passages are embedded next in small batches, which stop as soon as more changes arrive. The others
ask for the turn again every `TAKEOVER_POLL` seconds, and read what the holder writes as they read
any writer's. The holder says who it is, since when, how it watches and how far behind it runs in
`<home>/watch.json`, which `stats` and `doctor` show.

With a shared store (`PASTCHATS_STORE_URI`), the holder also keeps this machine's store in step with
it (`Library.exchange`): after each sync that wrote, and whenever the shared table's version moves
(asked every `SHARED_POLL` seconds: one listing request), so another machine's new chat reaches this
machine's indexes, and every reader here, as any local write does.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from server.services.sync import syncer_for
from server.settings import Settings
from storage.owner_only import FILE_MODE, open_private
from storage.writing.locks import process_running

if TYPE_CHECKING:
    from importers.sources.report import SyncReport
    from importers.sources.sync import Syncer
    from storage.library import Library

log = logging.getLogger("pastchats.watch")

LOCK = "watch.lock"
STATUS = "watch.json"
TAKEOVER_POLL = 2.0  # seconds between a waiting process's asks for the turn: the longest a takeover waits
DEBOUNCE_MS = 1000  # a burst of appends is one sync: changes are gathered for up to this long...
STEP_MS = 100  # ...or until none has come for this long
POLL_MS = 1000  # how often the polling fallback stats the watched files
ROOTS_CHECK = 30.0  # seconds between looks for agent folders created since the watch began
BUSY_RETRY = 1.0  # seconds before a sync that found another writer at work tries again
LIVE_BATCH = 64  # passages embedded per write-lock hold: new text waits at most one batch for its sync
# Seconds without changes after which the small writes of live sync are compacted (`Library.compact`:
# ~12 s under the write lock at 100k messages here, so never while an agent is writing).
QUIET_COMPACT = 60.0
# Seconds between asks whether the shared store has a new version: another machine's chat is
# searchable here within this, plus the exchange that brings it.
SHARED_POLL = 10.0
# Filesystems whose changes made elsewhere raise no local file events.
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "fuse.sshfs", "afs", "ceph", "glusterfs", "lustre"}
)


@dataclass
class WatchStatus:
    """What the watching process says of itself (`<home>/watch.json`); times are UTC ISO 8601."""

    pid: int
    command: str
    since: str
    mode: str  # "events" or "polling"
    why_polling: str | None
    folders: list[str]
    last_change: str | None = None  # when the last changes were seen
    last_sync: str | None = None  # when the last sync they caused ended
    lag_seconds: float | None = None  # from those changes being seen to their text being searchable
    waiting_files: int = 0  # files being written, read once their last line ends

    def text(self) -> str:
        how = "file events" if self.mode == "events" else f"polling ({self.why_polling})"
        line = f"pid {self.pid} `{self.command}` since {self.since}, {how}, {len(self.folders)} folder(s)"
        if self.lag_seconds is not None and self.last_sync:
            line += f"; last changes searchable {self.lag_seconds:.1f} s after they were seen ({self.last_sync})"
        return line


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def watch_status(home: Path) -> WatchStatus | None:
    """The watching process's status, or None when no process watches this store's agent logs now.

    The lock is the truth (a killed watcher leaves its status file behind): the status is believed
    while its process runs and the lock is taken; asked without waiting, and let go at once."""
    try:
        status = WatchStatus(**json.loads((home / STATUS).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if not process_running(status.pid):
        return None
    probe = FileLock(str(home / LOCK), mode=FILE_MODE)
    try:
        probe.acquire(timeout=0)
    except Timeout:
        return status
    except OSError:  # a store this user cannot write: the process check is all there is
        return status
    probe.release()
    return None


def network_filesystem(path: Path) -> str | None:
    """The type of the network filesystem holding `path` (Linux's mount table), else None."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as handle:
            mounts = [line.split()[1:3] for line in handle if len(line.split()) >= 3]
    except OSError:
        return None
    target, best = str(path.resolve()), ("", "")
    for point, kind in mounts:
        point = point.replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best[0]):
            best = (point, kind)
    return best[1] if best[1] in NETWORK_FILESYSTEMS else None


def watched_folders(roots: Sequence[Path]) -> list[Path]:
    """The roots (files or folders) and every folder under them reached without a symbolic link: what
    the watcher watches, each on its own."""
    found: list[Path] = []
    for root in roots:
        found.append(root)
        if not root.is_dir():
            continue
        for folder, subfolders, _ in os.walk(root, followlinks=False, onerror=None):
            subfolders[:] = [name for name in subfolders if not os.path.islink(os.path.join(folder, name))]
            found += [Path(folder, name) for name in subfolders]
    return found


def _new_folder(path: Path, watched: set[Path]) -> bool:
    return path not in watched and path.is_dir() and not path.is_symlink()


class _Halt:
    """What stops one watch: the process stopping, or the watched folders changing."""

    def __init__(self, stop: threading.Event):
        self.stop, self.restart = stop, threading.Event()

    def is_set(self) -> bool:
        return self.stop.is_set() or self.restart.is_set()


class Watcher:
    """Follows the agent logs for one store while this process holds the watch turn.

    `run(stop)` blocks until `stop` is set: asking for the turn until it is free, then watching.
    `on_round` is told each sync's report (the CLI prints it); `on_state` each change of role, in
    words (`watching ...`, `another process watches ...`)."""

    def __init__(
        self,
        settings: Settings,
        library: Library,
        *,
        extra_paths: Sequence[Path] = (),
        on_round: Callable[[SyncReport], None] | None = None,
        on_state: Callable[[str], None] | None = None,
        logs: bool = True,
    ):
        self.settings = settings
        self.logs = logs  # False: only the shared store is followed (`PASTCHATS_SYNC=false` with a store URI)
        self.library = library
        self.syncer: Syncer = syncer_for(settings, library, extra_paths)
        self.on_round = on_round or (lambda report: None)
        self.on_state = on_state or (lambda text: log.info("%s", text))
        self.home = library.home
        self.status: WatchStatus | None = None
        self.rounds = 0
        self.rounds_written = 0  # rounds that wrote to the store (a sync that changed chats, or embedding)
        self._lock = FileLock(str(self.home / LOCK), mode=FILE_MODE)
        self._changed = threading.Event()
        self._seen_at: float | None = None  # when the changes not yet synced were first seen (monotonic)
        self._whole = True  # the next sync checks the tables and compacts, as `pastchats sync` does
        self._stopping = threading.Event()
        self._unsent = True  # this machine may hold chats the shared store lacks: exchange at the first poll

    # ---- the turn ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self._stopping = stop
        said_waiting = False
        while not stop.is_set():
            try:
                self._lock.acquire(timeout=0)
            except Timeout:
                if not said_waiting:
                    holder = watch_status(self.home)
                    who = holder.text() if holder else "another process"
                    self.on_state(f"another process watches the agent logs ({who}); taking over when it exits")
                    said_waiting = True
                stop.wait(TAKEOVER_POLL)
                continue
            try:
                said_waiting = False
                self._follow(stop)
            finally:
                self.status = None
                self._lock.release()

    # ---- watching ------------------------------------------------------------------------------

    def roots(self) -> list[Path]:
        """The folders and files to watch: each agent's locations that exist, and the extra paths."""
        from importers import registry

        if not self.logs:
            return []

        found: list[Path] = []
        for format in self.syncer.formats:
            found += registry.agent_log(format).default_locations(self.syncer.env, self.syncer.home)
        home = self.syncer.home
        found += [home.joinpath(*p.parts[1:]) if p.parts[:1] == ("~",) else p for p in self.syncer.extra_paths]
        return sorted({path.absolute() for path in found if path.exists()})

    def _mode(self, roots: list[Path]) -> str | None:
        """Why these folders must be polled, or None when file events serve."""
        if self.settings.watch_polling:
            return "PASTCHATS_WATCH_POLLING is set"
        for root in roots:
            kind = network_filesystem(root)
            if kind is not None:
                return f"{root} is on a {kind} filesystem, whose changes raise no file events here"
        return None

    def _follow(self, stop: threading.Event) -> None:
        while not stop.is_set():
            roots = self.roots()
            why = self._mode(roots)
            halt = _Halt(stop)
            self.status = WatchStatus(
                pid=os.getpid(),
                command=" ".join(["pastchats", *sys.argv[1:]])[:200],  # `serve` or `sync --watch`, whatever started it
                since=self.status.since if self.status else _now(),
                mode="events" if why is None else "polling",
                why_polling=why,
                folders=[str(root) for root in roots],
            )
            self._write_status()
            how = "file events" if why is None else f"polling ({why})"
            self.on_state(f"watching {len(roots)} agent-log folder(s) with {how}")
            events = threading.Thread(target=self._events, args=(roots, why, halt), name="pastchats-watch", daemon=True)
            if roots:
                events.start()
            self._changed.set()  # first, what was written while no process watched: a whole sync
            self._whole = True
            self._serve(stop, roots)
            halt.restart.set()
            if events.is_alive():
                events.join(timeout=5)

    def _events(self, roots: list[Path], why_polling: str | None, halt: _Halt) -> None:
        """Raise `_changed` on each burst of changes in the agents' folders, until `halt`.

        Each real folder under the roots is watched on its own, not recursively: the OS watcher would
        follow a symbolic link out of the agents' folders (`ln -s /usr ~/.claude/projects/x` spent
        thousands of the user's inotify watches on /usr). A folder created under them starts the
        watch again with it included."""
        import watchfiles

        while not halt.is_set():
            folders = watched_folders(roots)
            known = set(folders)
            grown = False
            try:
                for changes in watchfiles.watch(
                    *folders,
                    watch_filter=None,
                    debounce=DEBOUNCE_MS,
                    step=STEP_MS,
                    stop_event=halt,
                    force_polling=why_polling is not None,
                    poll_delay_ms=POLL_MS,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                    recursive=False,
                ):
                    if self._seen_at is None:
                        self._seen_at = time.monotonic()
                    self._changed.set()
                    if any(_new_folder(Path(path), known) for _, path in changes):
                        grown = True
                        break
            except Exception as exc:  # events that fail to start (the OS's watch limit): polling still works
                if why_polling is not None:
                    log.exception("watching the agent logs failed; they are synced at the next rescan")
                    return
                why_polling = f"file events failed ({' '.join(str(exc).split())[:120]})"
                log.warning("%s: polling the agent logs instead", why_polling)
                if self.status is not None:
                    self.status.mode, self.status.why_polling = "polling", why_polling
                    self._write_status()
                continue
            if not grown:
                return

    def _serve(self, stop: threading.Event, roots: list[Path]) -> None:
        """Sync on each burst of changes (and at each rescan), embed in between; return when the set
        of folders to watch changes, or on stop."""
        interval = self.settings.sync_interval
        next_rescan = time.monotonic() + interval if interval else None
        next_roots = time.monotonic() + ROOTS_CHECK
        retry: float | None = None
        compact: float | None = None  # when to compact, once changes have been written and none follow
        shared = time.monotonic() if self.library.shared is not None else None  # when to ask the shared store
        while not stop.is_set():
            now = time.monotonic()
            deadlines = [next_roots, *(d for d in (next_rescan, retry, compact, shared) if d is not None)]
            # In slices of a second at most, so that a stop is noticed within one.
            if not self._changed.wait(min(1.0, max(0.0, min(deadlines) - now))) and stop.is_set():
                return
            now = time.monotonic()
            if self._changed.is_set() or (retry is not None and now >= retry) or (next_rescan and now >= next_rescan):
                if next_rescan and now >= next_rescan:
                    next_rescan = now + interval
                wrote = self.rounds_written
                retry = self._sync_round()
                if retry is None:
                    retry = self._embed()
                if self.rounds_written != wrote:
                    compact = time.monotonic() + QUIET_COMPACT
                    self._unsent = True
                    shared = now if shared is not None else None
            elif compact is not None and now >= compact and not self._changed.is_set():
                compact = None if self._compact() else now + BUSY_RETRY
            # Not one of the above: an agent writing without a pause must not hold other machines' chats back.
            if shared is not None and time.monotonic() >= shared:
                shared = time.monotonic() + (SHARED_POLL if self._share() else BUSY_RETRY)
            if now >= next_roots:
                next_roots = now + ROOTS_CHECK
                if self.roots() != roots:
                    return

    def _sync_round(self) -> float | None:
        """One sync of what changed; returns when to try again, if something is left for later."""
        self._changed.clear()
        if not self.logs:
            return None
        seen = self._seen_at if self._seen_at is not None else time.monotonic()
        self._seen_at = None
        try:
            report = self.syncer.run_once(embed=False, live=not self._whole)
        except Exception:  # a failed round must not end the watch; the next change or rescan tries again
            log.exception("syncing the agent logs failed")
            return None
        finally:
            self.rounds += 1
        if report.not_run:  # another process is writing: try again shortly
            log.info("sync deferred: %s", report.not_run)
            self._seen_at = seen
            return time.monotonic() + BUSY_RETRY
        self._whole = False
        if report.files_changed or report.files_failed:
            log.info("synced: %s", report.text().replace("\n", "; "))
        if report.conversations_new or report.conversations_updated:
            self.rounds_written += 1
        self.on_round(report)
        if self.status is not None:
            if report.files_changed:
                self.status.last_change = _now()
                self.status.lag_seconds = round(time.monotonic() - seen, 2)
                self.status.last_sync = _now()
            self.status.waiting_files = len(report.files_waiting)
            self._write_status()
        if report.files_waiting:  # read when their last line ends: its write raises an event, or later
            from importers.sources.sync import WRITING_GRACE

            return time.monotonic() + WRITING_GRACE
        return None

    def _share(self) -> bool:
        """Exchange chats with the shared store when this machine wrote or its version moved; False
        when another process here is writing (try again shortly)."""
        from importers.sources.sync_state import forgotten
        from storage.errors import SharedStoreUnreachable, StoreError
        from storage.writing.exchange import SharedState, record_contact

        library, shared = self.library, self.library.shared
        if shared is None:
            return True
        try:
            if not self._unsent and shared.version() == SharedState.load(self.home, shared.uri).version:
                record_contact(self.home, shared.uri, None)
                return True
            report = library.exchange(wait=0, forgotten=forgotten(self.home))
        except SharedStoreUnreachable as exc:  # searches say so; the next poll tries again
            log.info("%s", exc)
            record_contact(self.home, shared.uri, exc)
            return True
        except StoreError as exc:
            log.info("exchange with the shared store deferred: %s", exc)
            return False
        except Exception:
            log.exception("exchanging chats with the shared store failed; the next poll tries again")
            return True
        self._unsent = False
        if report.received or report.deleted_here:
            self.rounds_written += 1
            self._embed()
        return True

    def _embed(self) -> float | None:
        """Embed what awaits it in small batches until done or until more changes arrive."""
        from storage.errors import StoreError

        library = self.library
        if library.embedder is None:
            return None
        try:
            if not library.pending_embeddings():
                return None
            more = self._changed.is_set
            if library.embed_pending(
                batch=LIVE_BATCH, wait=0, until=lambda: more() or self._stopping.is_set(), fold=False
            ):
                self.rounds_written += 1
        except StoreError as exc:  # another process is writing: embed after it
            log.info("embedding deferred: %s", exc)
            return time.monotonic() + BUSY_RETRY
        except Exception:
            log.exception("embedding the new passages failed; the next round tries again")
        return None

    def _compact(self) -> bool:
        """Compact after a quiet spell; False when another process is writing (try again shortly)."""
        from storage.errors import StoreError

        try:
            self.library.compact(wait=0)
        except StoreError as exc:
            log.info("compaction deferred: %s", exc)
            return False
        except Exception:
            log.exception("compacting after live sync failed; the next quiet spell tries again")
        return True

    def _write_status(self) -> None:
        if self.status is None:
            return
        path = self.home / STATUS
        tmp = self.home / f".{STATUS}.{os.getpid()}.tmp"
        try:
            fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(asdict(self.status), handle)
            os.replace(tmp, path)
        except OSError as exc:  # the status is for people; the watch goes on without it
            log.info("could not write %s: %s", path, exc)
