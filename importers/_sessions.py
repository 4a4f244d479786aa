"""`SessionFileImporter`: what the importer of an agent that keeps one chat a file derives from.

Such an agent names how one of its session files looks (`is_session`, from its name and first bytes)
and how one is read (`convert`); finding its files under a folder, telling its folders by a look a few
levels down, the error when a path holds none, and skipping a file that cannot be read (the others
are still read) are the same for every such agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from importers._common import UnknownCounts, convert_each, note_unknown
from importers._files import any_file
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation


class SessionFileImporter(AgentLogImporter):
    """An agent that keeps one chat a file (`session_files` lists them under a folder)."""

    # How many folder levels below a path `detect` looks for a session file.
    detect_depth: ClassVar[int] = 3
    # The error when a path holds no session: "no pi sessions (sessions/--<folder>--/*.jsonl) under {path}".
    none_found: ClassVar[str]

    def is_session(self, file: Path) -> bool:
        """Whether `file` is one of the agent's session files (cheap: its name and first bytes)."""
        raise NotImplementedError

    def convert(self, file: Path, report: ImportReport, unknown: UnknownCounts) -> Conversation:
        """The chat one session file holds (raises `Unusable`, OSError or a record error to skip it)."""
        raise NotImplementedError

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return self.is_session(path)
        return path.is_dir() and any_file(path, self.detect_depth, self.is_session)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else self.session_files(path)
        if not files:
            raise SourceError(self.none_found.format(path=path))
        unknown: UnknownCounts = {}
        yield from convert_each(path, files, report, lambda file: self.convert(file, report, unknown), "session")
        note_unknown(report, unknown)
