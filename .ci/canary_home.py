"""Make a home full of agent logs holding a canary word, for CI to run the tests with as HOME.

    python .ci/canary_home.py HOME WORD

Every agent's test fixtures (`tests.agent_fixtures`) are laid out where the agent keeps its sessions on
Linux (its importer's `default_locations`), with WORD written into every chat's text (files and SQLite
databases alike); the folder's own name should hold WORD too (copies of its files are then found by
their path). The tests must run without reading any of it: CI fails when WORD turns up in their
temporary folders. Says which agents' logs hold the word, and fails when none do.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from importers import registry
from importers._sqlite import is_sqlite
from importers.base import AgentLogImporter
from importers.sources.discovery import discover
from tests.agent_fixtures import FIXTURES, session_folders

TEXT = {".json", ".jsonl", ".md", ".txt"}
WORD = re.compile(r"\b(the|The)\b")


def fixture_folders(importer: AgentLogImporter, location: Path) -> list[Path]:
    """The importer's fixture folders laid out as `location` (named as it is), those with the most of
    its last names in common first; then the folders it finds sessions in, whatever their names."""
    prefix = importer.name.split("-")[0]
    roots = sorted(FIXTURES.glob(f"{prefix}*"))
    found = [folder for root in roots for folder in [root, *sorted(root.rglob("*"))] if folder.is_dir()]

    def common(folder: Path) -> int:
        same = 0
        for mine, theirs in zip(reversed(folder.parts), reversed(location.parts), strict=False):
            if mine != theirs:
                break
            same += 1
        return same

    named = sorted((f for f in found if common(f)), key=lambda folder: (-common(folder), len(folder.parts)))
    return named + session_folders(importer)


def lay_out(importer: AgentLogImporter, home: Path) -> list[Path]:
    """At the first of the importer's locations a fixture can be laid out as, a copy of it in which the
    importer finds sessions (beside any another agent keeps there): a folder, or a session file of the
    location's name (Aider's history). That location, or none."""
    for location in importer.default_locations({}, home, "linux"):
        for folder in fixture_folders(importer, location):
            if location.suffix:
                file = folder / location.name
                if file.is_file() and importer.detect(file):
                    location.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(file, location)
                    return [location]
                continue
            with tempfile.TemporaryDirectory() as scratch:
                trial = shutil.copytree(folder, Path(scratch) / location.name)
                if any(importer.detect(file) for file in importer.session_files(trial)):
                    shutil.copytree(trial, location, dirs_exist_ok=True)
                    return [location]
    return []


def plant(word: str, location: Path) -> None:
    """The word after every "the" in the chats' text: in text files, and in SQLite databases' text."""
    for file in [location] if location.is_file() else sorted(location.rglob("*")):
        if file.is_file() and file.suffix in TEXT:
            text = file.read_text(encoding="utf-8", errors="surrogateescape")
            file.write_text(WORD.sub(rf"\1 {word}", text), encoding="utf-8", errors="surrogateescape")
        elif file.is_file() and is_sqlite(file):
            plant_in_database(word, file)


def plant_in_database(word: str, database: Path) -> None:
    connection = sqlite3.connect(database)
    with connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = connection.execute(f'PRAGMA table_info("{table}")').fetchall()
            for name in (column[1] for column in columns if str(column[2]).upper() == "TEXT"):
                connection.execute(
                    f'UPDATE "{table}" SET "{name}" = replace("{name}", \' the \', ?)', (f" the {word} ",)
                )
    connection.close()


def main(home: Path, word: str) -> int:
    home.mkdir(parents=True, exist_ok=True)
    for importer in registry.AGENT_LOGS:
        for location in lay_out(importer, home):
            plant(word, location)
    holding = []
    found, _ = discover({}, home)
    for source in found:
        conversations, _report = registry.read(source.path, source.format)
        if any(word in message.text for chat in conversations for message in chat.messages):
            holding.append(source.format)
    print(f"agent logs holding {word!r} in {home}: " + ", ".join(sorted(set(holding))))
    return 0 if holding else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).absolute(), sys.argv[2]))
