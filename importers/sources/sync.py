"""`pastchats sync`: find the agent logs on this machine, import what changed, keep a private copy.

What "incremental" means here, precisely:
- Discovery lists folders and stats files. A file whose size and mtime (for SQLite: and its `-wal`
  file's) are what sync last recorded is not opened at all.
- A changed text file is classified by reading only the 4 KiB before its old size: larger now with
  those bytes unchanged means it *grew*; anything else (smaller, same size, other bytes) is *edited*.
  A changed SQLite database is always *edited*.
- A changed file is then parsed whole by its importer: parsing is cheap and the formats cannot be
  resumed mid-file safely (Claude Code merges streamed replies; Gemini rewinds). Embedding is what
  costs, and `Library` makes it incremental: a conversation whose fingerprint is unchanged is skipped,
  and of a changed one only the chunks whose text is new are embedded (vectors are reused by hash).
- The archive copy of a grown file gets only the new tail appended (read from the source's old
  size on); an edited file is copied whole; a SQLite database (Cursor) is copied with SQLite's backup
  API from a read-only connection.
- When the exclusion settings change, every file is parsed again once (nothing unchanged is
  re-embedded), so lifting an exclusion imports what it kept out.
- A JSON Lines file whose last line has no end yet, written to moments ago (`WRITING_GRACE`), is
  being written: it is left for the next sync (reported as waiting), so a line is never read half
  written. One left that way for longer (an agent killed mid-write) is read as it is.
A source file that disappears leaves its chats in the store and its archive copy in place. One that
its agent rewrites holding less (truncated and written anew) keeps its chats' earlier messages in the
store beside the new ones, and its former archive copy beside the new one (`Archive.keep_earlier`):
an agent's own rewrite is not the user's delete.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from importers import registry
from importers._files import one_read_per_folder
from importers.base import Skip, SourceError
from importers.sources.archive import Archive
from importers.sources.discovery import AGENT_FORMATS, SQLITE_FORMATS, SourceFile, discover
from importers.sources.privacy import EXCLUDED, Exclusions, finish_deletes
from importers.sources.report import Change, SyncReport
from importers.sources.sync_state import READING, FileMark, SyncState, tail_hash
from storage.errors import StoreError
from storage.library import IngestProgress, Library
from storage.models import Conversation, Message
from storage.redaction import REMEMBERED

__all__ = ["SyncReport", "Syncer"]

log = logging.getLogger(__name__)

OPTED_OUT = "opt-out marker"  # the reason importers.registry gives
# Seconds a JSON Lines file with an unfinished last line is taken to be mid-write (agents write a
# record in one or a few writes, well within this); after that its last line is read as it is.
WRITING_GRACE = 10.0
REDACTED_AHEAD = REMEMBERED  # chats a live sync redacts before taking the write lock: what the library keeps


@dataclass
class _Planned:
    source: SourceFile
    change: Change
    stat: os.stat_result
    wal: tuple[int, int] | None
    old: FileMark | None
    messages: int = 0  # what its chats hold as the file is now
    kept: bool = False  # the store keeps messages of its chats that the file no longer holds


def _wal(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(f"{path}-wal")
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _being_written(path: Path, st: os.stat_result) -> bool:
    """A JSON Lines file whose last line has not ended yet, changed within `WRITING_GRACE` seconds."""
    if path.suffix != ".jsonl" or st.st_size == 0 or time.time() - st.st_mtime > WRITING_GRACE:
        return False
    try:
        with path.open("rb") as handle:
            handle.seek(st.st_size - 1)
            return handle.read(1) not in (b"\n", b"")
    except OSError:  # gone or unreadable since the stat: reading it reports why
        return False


class Syncer:
    """Imports what is new in the agent logs. `env` and `home` are the user's environment and home
    directory (for the agents' own variables and default folders), passed in by the caller."""

    def __init__(
        self,
        library: Library,
        *,
        env: Mapping[str, str],
        home: Path,
        extra_paths: Sequence[Path] = (),
        exclusions: Exclusions | None = None,
        formats: Sequence[str] = AGENT_FORMATS,
    ):
        self.library = library
        self.env = env
        self.home = home
        self.extra_paths = list(extra_paths)
        self.exclusions = (exclusions or Exclusions()).expanded(home)
        self.formats = [f for f in formats if not self.exclusions.excludes_source(f)]
        self.archive = Archive(library.home)

    def discover(self) -> tuple[list[SourceFile], list[Skip]]:
        return discover(self.env, self.home, self.extra_paths, self.formats)

    def run_once(
        self, progress: Callable[[IngestProgress], None] | None = None, *, embed: bool = True, live: bool = False
    ) -> SyncReport:
        """One sync; never waits for the store: if another process is writing, it skips and says so.
        Safe to call from a background thread. `embed=False` leaves new passages awaiting embedding,
        for a caller that embeds them next with a progress bar that knows the total; `live`: the live
        watcher's small write (`Library.import_conversations`), compacted later by the caller."""
        report = SyncReport()
        if live:
            self._redact_ahead()
        try:
            with self.library.lock.hold(timeout=0):
                self._sync(report, progress, embed, live)
        except StoreError as exc:
            report.not_run = str(exc)
        return report

    def _redact_ahead(self) -> None:
        """Live sync: read the files that changed and redact their chats before the write lock is taken,
        so that it is held to write them, not to scan them for secrets (the library remembers what it
        redacted; reading the files again under the lock is cheap). Anything amiss is left to the sync
        itself, which reads them again and reports it."""
        state = SyncState.load(self.library.home)
        sources, _ = self.discover()
        ahead: list[Conversation] = []
        for source in sources:
            if len(ahead) >= REDACTED_AHEAD or self.exclusions.excludes_path(source.path):
                continue
            planned = self._plan(source, state.files.get(str(source.path)), SyncReport())
            if planned is None or planned.change == "unchanged" or _being_written(source.path, planned.stat):
                continue
            try:
                conversations, _ = registry.read(source.path, source.format)
                # Read under the library's redaction, as the sync reads them again under the lock: what
                # the importer shortens is scanned here, and found already scanned there.
                ahead += list(self.library.redaction.reading(conversations))
            except Exception:  # an importer's failure is the sync's to report
                log.debug("sync: not read ahead: %s", source.path, exc_info=True)
        self.library.redact_ahead(ahead[:REDACTED_AHEAD])

    def _sync(
        self, report: SyncReport, progress: Callable[[IngestProgress], None] | None, embed: bool, live: bool
    ) -> None:
        state = SyncState.load(self.library.home)
        finish_deletes(self.library, state)  # a delete killed part way: before anything is read again
        # Other exclusions, or marks an older reading made (chats without what is read now): every file again.
        reparse = state.exclusions != self.exclusions.fingerprint() or state.reading < READING
        sources, problems = self.discover()
        report.files_failed += problems
        plan: list[_Planned] = []
        for source in sources:
            report.files_seen += 1
            if self.exclusions.excludes_path(source.path):
                report.files_excluded += 1
                continue
            planned = self._plan(source, state.files.get(str(source.path)), report)
            if planned is None:
                continue
            if planned.change == "unchanged" and not reparse:
                report.files_unchanged += 1
                continue
            if planned.change != "unchanged" and _being_written(source.path, planned.stat):
                report.files_waiting.append(str(source.path))
                continue
            report.count(planned.change)
            plan.append(planned)
        if plan:
            marks: dict[str, FileMark] = {}
            conversations = self._conversations(plan, set(state.forgotten), marks, report)
            with one_read_per_folder():  # what a source needs from a file's folder: read once, not per file
                stats = self.library.import_conversations(
                    conversations, progress=progress, wait=0, embed=embed, live=live
                )
            report.record(stats)
            state.files.update(marks)
        if plan or reparse:
            state.exclusions = self.exclusions.fingerprint()
            state.reading = READING
            state.save(self.library.home)

    def _plan(self, source: SourceFile, old: FileMark | None, report: SyncReport) -> _Planned | None:
        """Stat the file (and, if it changed, read the 4 KiB before its old size)."""
        try:
            st = source.path.stat()
            wal = _wal(source.path) if source.format in SQLITE_FORMATS else None
            change: Change
            if old is None or old.format != source.format:
                change = "new"
            elif (st.st_size, st.st_mtime_ns, wal) == (old.size, old.mtime_ns, old.wal):
                change = "unchanged"
            elif source.format in SQLITE_FORMATS or st.st_size <= old.size:
                change = "edited"
            else:
                change = "grown" if tail_hash(source.path, old.size) == old.tail_hash else "edited"
        except OSError as exc:
            report.files_failed.append(Skip(str(source.path), f"cannot read: {exc.strerror or exc}"))
            return None
        return _Planned(source, change, st, wal, old)

    def _conversations(
        self, plan: list[_Planned], forgotten: set[str], marks: dict[str, FileMark], report: SyncReport
    ) -> Iterator[Conversation]:
        """Parse each changed file, filter, archive; record its new mark in `marks`. Never raises for a file."""
        for item in plan:
            path = item.source.path
            log.info("sync: reading %s (%s)", path, item.change)
            try:
                kept, error = self._read(item, forgotten, report)
            except OSError as exc:
                report.files_failed.append(Skip(str(path), f"cannot read: {exc.strerror or exc}"))
                continue
            except Exception as exc:  # an importer bug must not stop the sync of every other file
                log.exception("sync: failed on %s", path)
                report.files_failed.append(Skip(str(path), f"unexpected error: {exc}"))
                continue
            try:
                marks[str(path)] = self._mark(item, kept, error, report)
            except (OSError, sqlite3.Error) as exc:
                # Indexed all the same; with no mark recorded, the next sync reads it and tries again.
                report.files_failed.append(Skip(str(path), f"imported, but not archived: {exc}"))
            yield from kept

    def _read(self, item: _Planned, forgotten: set[str], report: SyncReport) -> tuple[list[Conversation], str | None]:
        path = item.source.path
        try:
            conversations, importer_report = registry.read(path, item.source.format)  # applies the opt-out marker
            found = list(conversations)
        except SourceError as exc:
            report.files_failed.append(Skip(str(path), str(exc)))
            return [], str(exc)
        skips = [
            Skip(str(path) if s.where == path.name else f"{path} ({s.where})", s.reason)
            for s in importer_report.skipped
        ]
        kept: list[Conversation] = []
        for conversation in found:
            if conversation.id in forgotten:
                skips.append(Skip(conversation.id, "deleted by you earlier (import the file to bring it back)"))
            elif self.exclusions.excludes(conversation):
                skips.append(Skip(conversation.id, EXCLUDED))
            else:
                kept.append(conversation)
        item.messages = sum(len(conversation.messages) for conversation in kept)
        old = item.old
        if old is not None and item.source.format not in SQLITE_FORMATS and (item.change == "edited" or old.earlier):
            kept = [self._with_history(conversation, item) for conversation in kept]
        unreadable = [s for s in skips if s.reason != OPTED_OUT]
        if not found and unreadable:
            reason = "; ".join(s.reason for s in unreadable)
            report.files_failed.append(Skip(str(path), reason))
            return [], reason
        report.conversations_skipped += skips
        own = f"{Path(path).name}: "  # an importer's note names the file it read: said once, as its full path
        report.notes += [f"{path}: {note.removeprefix(own)}" for note in importer_report.notes]
        return kept, None

    def _with_history(self, conversation: Conversation, item: _Planned) -> Conversation:
        """`conversation` as its file now holds it, with the messages the store holds of it that the file
        no longer does, when the file dropped some (an agent truncating its log and writing it anew: its
        own rewrite is not the user's delete). Those come first, as they were stored; a message id the
        new text reuses for other words keeps the earlier message under `<id>~earlier`."""
        try:
            stored = self.library.get(conversation.id)
        except StoreError:
            return conversation
        now = {message.id: message.text for message in conversation.messages}
        if len(conversation.messages) >= len(stored.messages) and all(m.id in now for m in stored.messages):
            return conversation  # nothing dropped: an ordinary edit
        earlier = [m for m in stored.messages if now.get(m.id) != m.text]
        if not earlier:
            return conversation
        item.kept = True
        taken = set(now)
        messages: list[Message] = []
        for message in [*earlier, *conversation.messages]:
            message_id = message.id
            while message_id in taken and message in earlier:
                message_id = f"{message_id}~earlier"
            taken.add(message_id)
            messages.append(dataclasses.replace(message, id=message_id, index=len(messages)))
        return conversation.model_copy(
            update={
                "messages": messages,
                "created_at": min(conversation.created_at, stored.created_at),
                "updated_at": max(conversation.updated_at, stored.updated_at),
            }
        )

    def _mark(self, item: _Planned, kept: list[Conversation], error: str | None, report: SyncReport) -> FileMark:
        """Bring the archive copy up to date (when something from the file is kept) and say how far we read."""
        path, fmt, old = item.source.path, item.source.format, item.old
        relative = old.archive if old and old.archive else self.archive.relative_for(fmt, path)
        archived = old.archive if old else None
        size = item.stat.st_size
        if kept and fmt in SQLITE_FORMATS:
            self.archive.backup_sqlite(path, relative)
            report.archived_bytes += self.archive.size(relative) or 0
            archived = relative
        elif kept:
            held = self.archive.size(relative)
            if old and archived and item.change in {"grown", "unchanged"} and held == old.size:
                written = self.archive.append(path, relative, old.size, item.stat.st_size)
                size = old.size + written
            else:
                if old and (item.messages < old.messages if old.messages is not None else item.kept):
                    self.archive.keep_earlier(relative)  # the file lost messages its copy holds
                size = written = self.archive.copy(path, relative)
            report.archived_bytes += written
            archived = relative
        if kept:
            for context in registry.agent_log(fmt).context_files(path):
                report.archived_bytes += self.archive.keep_context(context, self.archive.relative_for(fmt, context))
        digest = ""
        if fmt not in SQLITE_FORMATS:
            try:
                digest = tail_hash(self.archive.path(relative) if kept else path, size)
            except OSError:
                if kept:
                    raise
                # Unreadable, and reported so by the read: recorded with no digest, read again when it changes.
        return FileMark(
            format=fmt,
            size=size,
            mtime_ns=item.stat.st_mtime_ns,
            tail_hash=digest,
            wal=item.wal,
            archive=archived,
            # Ids now excluded or forgotten stay listed while their archive copy is kept, so that
            # deleting them later still finds it.
            conversations=list(dict.fromkeys([c.id for c in kept] + (old.conversations if old else []))),
            error=error,
            messages=item.messages,
            earlier=item.kept or bool(old and old.earlier),
        )
