"""Make a home full of agent logs holding a canary word, for CI to run the tests with as HOME.

    python .ci/canary_home.py HOME WORD

Every agent's test fixtures are laid out where the agent keeps its sessions on Linux (its importer's
`default_locations`), with WORD written into every chat's text; the folder's own name should hold WORD
too (copies of its files are then found by their path). The tests must run without reading any of it:
CI fails when WORD turns up in their temporary folders. Says which agents' logs hold the word, and
fails when none do.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from importers import registry
from importers.base import AgentLogImporter
from importers.sources.discovery import discover

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "importers"
TEXT = {".json", ".jsonl", ".md", ".txt"}
WORD = re.compile(r"\b(the|The)\b")


def fixture_folders(importer: AgentLogImporter, location: Path) -> list[Path]:
    """The importer's fixture folders laid out as `location` (named as it is), those with the most of
    its last names in common first, then the shallowest."""
    roots = sorted(FIXTURES.glob(f"{importer.name}*"))
    found = [folder for root in roots for folder in [root, *sorted(root.rglob("*"))] if folder.is_dir()]

    def common(folder: Path) -> int:
        same = 0
        for mine, theirs in zip(reversed(folder.parts), reversed(location.parts), strict=False):
            if mine != theirs:
                break
            same += 1
        return same

    return sorted((f for f in found if common(f)), key=lambda folder: (-common(folder), len(folder.parts)))


def lay_out(importer: AgentLogImporter, home: Path) -> list[Path]:
    """At the first of the importer's folders that one of its fixture folders is laid out as, a copy of
    that fixture in which it finds sessions (beside any another agent keeps there); that location."""
    for location in importer.default_locations({}, home, "linux"):
        if location.suffix:
            continue  # a single file: a database, or Aider's history
        for folder in fixture_folders(importer, location):
            with tempfile.TemporaryDirectory() as scratch:
                trial = shutil.copytree(folder, Path(scratch) / location.name)
                if any(importer.detect(file) for file in importer.session_files(trial)):
                    shutil.copytree(trial, location, dirs_exist_ok=True)
                    return [location]
    return []


def plant(word: str, location: Path) -> None:
    for file in location.rglob("*"):
        if file.is_file() and file.suffix in TEXT:
            text = file.read_text(encoding="utf-8", errors="surrogateescape")
            file.write_text(WORD.sub(rf"\1 {word}", text), encoding="utf-8", errors="surrogateescape")


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
