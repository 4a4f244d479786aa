"""Reading the files agents leave behind: bounded directory walks for detection, JSON Lines that
may be cut mid-write or hold undecodable bytes, file heads and times.

Only regular files are ever opened: a FIFO would block the import forever, a device could stream
without end. Opening is non-blocking and the kind is checked on the open descriptor, so a path that
changes between the check and the open cannot slip through.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from importers.base import ImportReport


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket or directory: never read as a chat file."""


_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def not_regular_reason(mode: int) -> str:
    return f"not a regular file but {_KINDS.get(stat.S_IFMT(mode), 'a special file')}"


def is_regular(path: Path) -> bool:
    """Whether the path (following symlinks) is a regular file; never opens it, never raises."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: Path) -> IO[bytes]:
    """Open a regular file for binary reading; raises NotRegularFile (an OSError) for anything else."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, not_regular_reason(mode), str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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
        with open_regular(path) as handle:
            return handle.read(size).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return ""
