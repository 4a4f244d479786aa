"""What every importer shares: the protocol, the report of what was skipped, and source errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from storage.errors import SourceError
from storage.models import Conversation

__all__ = ["PLATFORMS", "AgentLogImporter", "ImportReport", "Importer", "Skip", "SourceError"]

# The systems agents keep their files on, as `sys.platform` names them.
PLATFORMS = ("linux", "darwin", "win32")


@dataclass(frozen=True)
class Skip:
    """Something not imported (a conversation, a record, a whole file) and why: the one skip record of
    every importer report, import summary and sync report."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class ImportReport:
    """What an importer noticed while reading: skipped conversations and sensible fallbacks it applied."""

    path: Path
    format: str = ""
    skipped: list[Skip] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # When `path` is a copy (the archive's), the path its program wrote it at: ids, links and
    # projects are made from that, so a chat read from its copy is the same chat.
    origin: Path | None = None

    def original(self, file: Path) -> Path:
        """Where `file` (the path read, or a file under it) was written by its program."""
        if self.origin is None:
            return file.resolve()
        return self.origin if file == self.path else self.origin / file.relative_to(self.path)

    def skip(self, where: str, reason: str) -> None:
        self.skipped.append(Skip(where, reason))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


class Importer(Protocol):
    """A source format: one module's class deriving from this, listed in `importers.registry.IMPORTERS`.

    `detect` tells the format from names and the first bytes of files: it must be cheap (no file is
    parsed) and never raise. `read` streams conversations; it reports a bad conversation through
    `report.skip(...)` and goes on with the rest, and raises `SourceError` only when nothing at all
    can be read.
    """

    # The agent's own command that continues one of its sessions, "{session}" standing for the session's
    # id (`session_id`), run in the session's folder; empty when the agent has none (a chat app's export).
    resume: ClassVar[tuple[str, ...]] = ()

    @property
    def name(self) -> str: ...

    def detect(self, path: Path) -> bool: ...

    def session_id(self, conversation_id: str, url: str | None = None) -> str | None:
        """The agent's own id of the session a chat of this format is (what `resume` takes): the chat's
        id after the format's name (`codex:<session>`), unless the format says otherwise (from the id,
        or from the chat's `url`, where the importer gave the session's file)."""
        return conversation_id.partition(":")[2] or None

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]: ...


class AgentLogImporter(Importer, Protocol):
    """A format an agent writes on this machine, which sync finds by itself. Its module declares
    everything about the agent: where it keeps its sessions on each system (`default_locations`), the
    environment variables that move them (`variables`), which files in a folder hold sessions
    (`session_files`, also what `read` reads from a folder), detection and reading. The settings, sync,
    doctor and the tests derive from these: a new agent is one module with a class deriving from this,
    and its line in `importers.registry.AGENT_LOGS`.
    """

    # Each environment variable the agent itself honours to move its files, and what it moves (one line,
    # shown in the settings' help): sync reads these, and only these, from the environment.
    variables: ClassVar[Mapping[str, str]] = {}
    # Whether its session files are SQLite databases (copied with the backup API, re-read whole).
    database: bool = False

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        """Where the agent keeps its sessions on `platform` (one of `PLATFORMS`) for the user whose home
        is `home`, with `variables` read from `env`: files, or folders `session_files` searches."""
        ...

    def session_files(self, folder: Path) -> list[Path]: ...

    def context_files(self, session: Path) -> list[Path]:
        """Files beside a session file that its chats' projects are read from (sync archives them with
        it, so that a copy read back gives the same projects); none for most formats."""
        return []
