"""Reading the files agents leave behind: bounded directory walks for detection, JSON Lines that
may be cut mid-write or hold undecodable bytes, file heads and times.

Only regular files are ever opened: a FIFO would block the import forever, a device could stream
without end. Opening is non-blocking and the kind is checked on the open descriptor, so a path that
changes between the check and the open cannot slip through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from importers.base import ImportReport
from importers.sniff_files import (  # moved there: detection reads files without pydantic (start-up speed)
    NotRegularFile,
    any_file,
    is_regular,
    not_regular_reason,
    open_regular,
    read_head,
    walk_files,
)

__all__ = [
    "NotRegularFile",
    "any_file",
    "file_time",
    "is_regular",
    "iter_jsonl",
    "not_regular_reason",
    "open_regular",
    "read_head",
    "read_regular",
    "walk_files",
]


def read_regular(path: Path) -> bytes:
    with open_regular(path) as handle:
        return handle.read()


def file_time(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return datetime.now(UTC)


def iter_jsonl(path: Path, report: ImportReport) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each readable line. Tolerates a last line cut mid-write, undecodable
    bytes (replaced) and broken lines in the middle (counted in the report)."""
    broken = 0
    with open_regular(path) as handle:
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
