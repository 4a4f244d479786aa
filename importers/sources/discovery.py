"""Where agent logs live on this machine, and the session files each place holds.

Each agent-log importer knows its default locations (`default_locations(env, home)`, honouring the
agent's own variables such as `CLAUDE_CONFIG_DIR` or `CODEX_HOME`); the user can add more (Aider
keeps a history file in every repository). Missing default locations are skipped silently; a
configured path that is missing or holds no agent logs is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from importers import aider, claude_code, codex, cursor, gemini, registry
from importers._files import walk_files

AGENT_FORMATS: tuple[str, ...] = ("claude-code", "codex", "gemini", "aider", "cursor")
SQLITE_FORMATS = frozenset({"cursor"})

_LOCATIONS: dict[str, Callable[[Mapping[str, str], Path], list[Path]]] = {
    "claude-code": claude_code.default_locations,
    "codex": codex.default_locations,
    "gemini": gemini.default_locations,
    "aider": aider.default_locations,
    "cursor": cursor.default_locations,
}


@dataclass(frozen=True)
class SourceFile:
    path: Path
    format: str


def _under(path: Path, names: Iterable[str]) -> list[Path]:
    inside = [path / name for name in names if (path / name).is_dir()]
    return inside or [path]


def _claude_code(folder: Path) -> Iterator[Path]:
    for root in _under(folder, ["projects"]):
        yield from root.rglob("*.jsonl")  # subagent logs included: <session>/subagents/agent-*.jsonl


def _codex(folder: Path) -> Iterator[Path]:
    for root in _under(folder, ["sessions", "archived_sessions"]):
        yield from root.rglob("rollout-*.jsonl")


def _gemini(folder: Path) -> Iterator[Path]:
    for root in _under(folder, ["tmp"]):
        for path in root.rglob("session-*.json*"):
            if path.suffix not in {".json", ".jsonl"} or "chats" not in path.relative_to(root).parts:
                continue
            if path.suffix == ".json" and path.with_suffix(".jsonl").exists():
                continue  # Gemini CLI migrated it to JSON Lines; the .jsonl is the live copy
            yield path


def _aider(folder: Path) -> Iterator[Path]:
    if (folder / aider.HISTORY_FILE).is_file():
        yield folder / aider.HISTORY_FILE


def _cursor(folder: Path) -> Iterator[Path]:
    return (path for path in walk_files(folder, 3) if path.name == cursor.DB_NAME)


_FOLDER_FILES: dict[str, Callable[[Path], Iterator[Path]]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "gemini": _gemini,
    "aider": _aider,
    "cursor": _cursor,
}


def files_in(format: str, location: Path) -> list[Path]:
    """The session files at `location` (a file, or a folder searched the way `format` lays them out)."""
    try:
        if location.is_file():
            return [location]
        if location.is_dir():
            return sorted(path for path in _FOLDER_FILES[format](location) if path.is_file())
    except OSError:
        pass
    return []


def discover(
    env: Mapping[str, str],
    home: Path,
    extra_paths: Sequence[Path] = (),
    formats: Sequence[str] = AGENT_FORMATS,
) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """(every session file found, once each; problems with the configured extra paths)."""
    found: dict[Path, SourceFile] = {}
    problems: list[tuple[str, str]] = []

    def add(format: str, paths: Iterable[Path]) -> None:
        for path in paths:
            found.setdefault(path.absolute(), SourceFile(path.absolute(), format))

    for format in formats:
        for location in _LOCATIONS[format](env, home):
            add(format, files_in(format, location))
    for extra in extra_paths:
        path = home.joinpath(*extra.parts[1:]) if extra.parts[:1] == ("~",) else extra
        if not path.exists():
            problems.append((str(extra), "does not exist"))
            continue
        detected = next((f for f in formats if registry.get(f).detect(path)), None)
        if detected is None:
            problems.append((str(extra), "holds no agent logs (use `pastchats import` for exports)"))
            continue
        add(detected, files_in(detected, path))
    return sorted(found.values(), key=lambda source: str(source.path)), problems
