"""Each agent's test fixtures, found from its importer: the tests that run over every format (fuzzing,
re-importing) and CI's home of agent logs take an agent's sessions from here, so a new agent's fixtures
are used by them without a line of their own.

An agent's fixtures are in `tests/fixtures/importers/<name>*/` (`<name>`: its format's name up to
the first `-`, so `opencode-files` shares OpenCode's), each folder laid out as the agent lays out its
files (a version's folder may hold the agent's whole home, or only its sessions folder).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from importers import registry
from importers.base import AgentLogImporter, ImportReport

__all__ = ["FIXTURES", "good_session", "session_folders"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"


def session_folders(importer: AgentLogImporter) -> list[Path]:
    """The fixture folders of `importer`'s format in which it finds sessions, as it finds them at one of
    its locations: each version's shallowest such folder (a folder inside one found is not listed)."""
    found: list[Path] = []
    for root in sorted(FIXTURES.glob(f"{importer.name.split('-')[0]}*")):
        folders = [root, *sorted(path for path in root.rglob("*") if path.is_dir())]
        for folder in sorted(folders, key=lambda path: len(path.parts)):
            if any(folder.is_relative_to(other) for other in found):
                continue
            if any(importer.detect(file) for file in importer.session_files(folder)):
                found.append(folder)
    return found


@cache
def good_session(format: str) -> tuple[Path, str]:
    """A session file of `format`'s fixtures that reads whole (at least one chat, nothing skipped), and
    its path inside the folder the agent keeps it in: (file, relative path)."""
    importer = registry.agent_log(format)
    for folder in session_folders(importer):
        for file in importer.session_files(folder):
            report = ImportReport(path=file)
            if any(True for _ in importer.read(file, report)) and not report.skipped:
                return file, file.relative_to(folder).as_posix()
    raise LookupError(f"no fixture of {format} reads whole: add one under {FIXTURES}/{format}/")
