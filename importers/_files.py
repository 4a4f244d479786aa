"""Reading the files agents leave behind: bounded directory walks for detection, JSON Lines that
may be cut mid-write or hold undecodable bytes, file heads and times."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from importers.base import ImportReport


def file_time(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return datetime.now(UTC)


def iter_jsonl(path: Path, report: ImportReport) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each readable line. Tolerates a last line cut mid-write, undecodable
    bytes (replaced) and broken lines in the middle (counted in the report)."""
    broken = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            text = raw.decode("utf-8", "replace")
            if number == 1:
                text = text.lstrip("\ufeff")
            try:
                yield number, json.loads(text)
            except RecursionError:
                broken += 1
            except ValueError:
                if not raw.endswith(b"\n"):
                    report.note(f"{path.name}: the last line was cut off mid-write; the lines before it were read")
                else:
                    broken += 1
    if broken:
        report.note(f"{path.name}: {broken} unreadable line(s) skipped")


def walk_files(root: Path, depth: int) -> Iterator[Path]:
    """Files under root, at most `depth` directories down, shallowest first, in name order.
    Hidden directories below the root are not entered."""
    level = [root]
    for _ in range(depth + 1):
        next_level: list[Path] = []
        for directory in level:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_file():
                        yield Path(entry.path)
                    elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                        next_level.append(Path(entry.path))
                except OSError:
                    continue
        level = next_level


def any_file(root: Path, depth: int, wanted: Callable[[Path], bool], limit: int = 2000) -> bool:
    """Whether a file under root (at most `depth` down, the first `limit` files) passes `wanted`.

    For detection: `wanted` should check the name first and read a head only for likely names.
    """
    for visited, found in enumerate(walk_files(root, depth)):
        if visited >= limit:
            return False
        if wanted(found):
            return True
    return False


def read_head(path: Path, size: int = 16384) -> str:
    """The start of a file as text, or "" if it cannot be read. For cheap detection."""
    try:
        with path.open("rb") as handle:
            return handle.read(size).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return ""
