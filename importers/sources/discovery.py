"""Where agent logs live on this machine, and the session files each place holds.

Each agent-log importer (`importers.base.AgentLogImporter`) knows its default locations, honouring
the agent's own variables such as `CLAUDE_CONFIG_DIR` or `CODEX_HOME`, and which files in a folder are
sessions; the user can add more places (Aider keeps a history file in every repository). Missing
default locations are skipped silently; a configured path that is missing or holds no agent logs is
reported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from importers import registry
from importers.base import Skip

__all__ = ["AGENT_FORMATS", "SQLITE_FORMATS", "SourceFile", "discover"]

AGENT_FORMATS: tuple[str, ...] = tuple(importer.name for importer in registry.AGENT_LOGS)
SQLITE_FORMATS = frozenset(importer.name for importer in registry.AGENT_LOGS if importer.database)


@dataclass(frozen=True)
class SourceFile:
    path: Path
    format: str


def files_in(format: str, location: Path, problems: list[Skip] | None = None) -> list[Path]:
    """The session files at `location` (a file, or a folder searched the way `format` lays them out);
    folders under it that cannot be listed are added to `problems` (the search passes them by)."""
    try:
        if location.is_file():
            return [location]
        if location.is_dir():
            if problems is not None:
                problems += unlistable_folders(location)
            return sorted(path for path in registry.agent_log(format).session_files(location) if path.is_file())
    except OSError:
        pass
    return []


def unlistable_folders(root: Path) -> list[Skip]:
    """The folders under `root` (reached without a symbolic link) that cannot be listed."""
    found: list[Skip] = []

    def note(error: OSError) -> None:
        found.append(Skip(str(error.filename), f"cannot read this folder: {error.strerror or error}"))

    for _ in os.walk(root, onerror=note):
        pass
    return found


def discover(
    env: Mapping[str, str],
    home: Path,
    extra_paths: Sequence[Path] = (),
    formats: Sequence[str] = AGENT_FORMATS,
) -> tuple[list[SourceFile], list[Skip]]:
    """(every session file found, once each; problems with the configured extra paths)."""
    found: dict[Path, SourceFile] = {}
    problems: list[Skip] = []

    def add(format: str, paths: Iterable[Path]) -> None:
        for path in paths:
            found.setdefault(path.absolute(), SourceFile(path.absolute(), format))

    for format in formats:
        for location in registry.agent_log(format).default_locations(env, home):
            add(format, files_in(format, location, problems))
    for extra in extra_paths:
        path = home.joinpath(*extra.parts[1:]) if extra.parts[:1] == ("~",) else extra
        if not path.exists():
            problems.append(Skip(str(extra), "does not exist"))
            continue
        detected = next((f for f in formats if registry.get(f).detect(path)), None)
        if detected is None:
            problems.append(Skip(str(extra), "holds no agent logs (use `pastchats import` for exports)"))
            continue
        add(detected, files_in(detected, path, problems))
    # Agents sharing a folder (the editor extensions) would each report an unreadable folder in it.
    return sorted(found.values(), key=lambda source: str(source.path)), list(dict.fromkeys(problems))
