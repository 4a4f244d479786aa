"""`pastchats reindex`: rebuild the store from the private archive, as if from the original files.

Sync keeps a copy of every agent log it indexed at `home/archive/<format>/<the original's path>`,
with the files beside it that name its projects (Gemini CLI's registry, Cursor's `workspace.json`),
and remembers in `sync-state.json` which original each copy stands for. Reindex reads every copy
with its format's importer, told the original's path, so each chat gets the id, link and project the
live file gave it, whether or not that file still exists. A copy sync has no record of (the state
file was lost) stands for the path its place in the archive mirrors.

Re-importing is an upsert: unchanged chats cost nothing, and only new text is embedded. Chats the
user deleted stay deleted, and the exclusion settings apply, as in sync.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from importers import registry
from importers.base import Skip, SourceError
from importers.sources.archive import Archive
from importers.sources.discovery import AGENT_FORMATS
from importers.sources.privacy import EXCLUDED, Exclusions
from importers.sources.report import Outcome, listed, noted
from importers.sources.sync_state import SyncState
from storage.errors import StoreError
from storage.library import IngestProgress, Library
from storage.models import Conversation

__all__ = ["ArchivedFile", "ReindexReport", "Reindexer", "archived_files"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ArchivedFile:
    copy: Path
    origin: Path
    format: str


@dataclass(kw_only=True)
class ReindexReport(Outcome):
    """What one `pastchats reindex` read and did."""

    files_read: int = 0
    files_failed: list[Skip]
    not_run: str | None = None

    def text(self) -> str:
        if self.not_run:
            return f"Reindex skipped: {self.not_run}"
        lines = [
            f"Archive: {self.files_read} files read, {len(self.files_failed)} failed",
            f"Chats: {self.counts()} · {self.chunks_embedded} passages embedded",
        ]
        lines += listed("failed", self.files_failed) + listed("skipped", self.conversations_skipped)
        return "\n".join(lines + noted(self.notes))


def archived_files(home: Path) -> list[ArchivedFile]:
    """Every session copy in `home/archive`, with the original it stands for."""
    archive = Archive(home)
    state = SyncState.load(home)
    found: dict[Path, ArchivedFile] = {}
    for origin, mark in state.files.items():
        if mark.archive and archive.path(mark.archive).is_file():
            copy = archive.path(mark.archive)
            found[copy] = ArchivedFile(copy, Path(origin), mark.format)
    for format in AGENT_FORMATS:
        # Copies sync has no record of: every file in the format's folder, less the files kept for
        # the projects beside the copies (the archive mirrors deep paths the agents' own folder
        # layouts do not describe, so the importers' session listings do not apply here).
        importer, root = registry.agent_log(format), archive.root / format
        files = {path for path in root.rglob("*") if path.is_file() and path.suffix != ".tmp"}
        context = {ctx for path in files for ctx in importer.context_files(path)}
        for copy in sorted(files - context - set(found)):
            found[copy] = ArchivedFile(copy, _mirrored(copy.relative_to(root)), format)
    return sorted(found.values(), key=lambda item: str(item.origin))


def _mirrored(relative: Path) -> Path:
    """The original path an archive copy mirrors (`Archive.relative_for` in reverse, below the format)."""
    parts = relative.parts
    if sys.platform == "win32" and parts and len(parts[0]) == 1 and parts[0].isalpha():  # a drive letter
        return Path(f"{parts[0]}:/", *parts[1:])
    return Path(str(PurePosixPath("/", *parts)))


class Reindexer:
    """Reads the archive back into the store. `home` is the user's home (for the exclusion settings)."""

    def __init__(self, library: Library, *, home: Path, exclusions: Exclusions | None = None):
        self.library = library
        self.exclusions = (exclusions or Exclusions()).expanded(home)

    def run(self, progress: Callable[[IngestProgress], None] | None = None, wait: float = -1) -> ReindexReport:
        report = ReindexReport(files_failed=[])
        try:
            with self.library.lock.hold(timeout=wait):
                forgotten = set(SyncState.load(self.library.home).forgotten)
                files = [f for f in archived_files(self.library.home) if not self._excluded_file(f)]
                stats = self.library.import_conversations(
                    self._conversations(files, forgotten, report), progress=progress, wait=wait
                )
                report.record(stats)
        except StoreError as exc:
            report.not_run = str(exc)
        return report

    def _excluded_file(self, item: ArchivedFile) -> bool:
        return self.exclusions.excludes_source(item.format) or self.exclusions.excludes_path(item.origin)

    def _conversations(
        self, files: list[ArchivedFile], forgotten: set[str], report: ReindexReport
    ) -> Iterator[Conversation]:
        for item in files:
            try:
                conversations, read = registry.read(item.copy, item.format, origin=item.origin)
                found = list(conversations)
            except SourceError as exc:
                report.files_failed.append(Skip(str(item.origin), str(exc)))
                continue
            except Exception as exc:  # an importer bug must not stop the rest of the archive
                log.exception("reindex: failed on %s", item.copy)
                report.files_failed.append(Skip(str(item.origin), f"unexpected error: {exc}"))
                continue
            report.files_read += 1
            where = str(item.origin)
            report.conversations_skipped += [
                Skip(where if s.where == item.copy.name else f"{where} ({s.where})", s.reason) for s in read.skipped
            ]
            report.notes += [f"{where}: {note}" for note in read.notes]
            for conversation in found:
                if conversation.id in forgotten:
                    report.conversations_skipped.append(Skip(conversation.id, "deleted by you earlier"))
                elif self.exclusions.excludes(conversation):
                    report.conversations_skipped.append(Skip(conversation.id, EXCLUDED))
                else:
                    yield conversation
