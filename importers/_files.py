"""Reading what chat sources leave behind, for detection and import alike: bounded directory walks,
file heads and times, JSON Lines that may be cut mid-write or hold undecodable bytes, and exports
that arrive as a zip, a folder or one file (`Bundle`).

Only regular files are ever opened: a FIFO would block the import forever, a device could stream
without end. Opening is non-blocking and the kind is checked on the open descriptor, so a path that
changes between the check and the open cannot slip through.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from importers.base import ImportReport
from storage.errors import SourceError

T = TypeVar("T")
MAX_WHOLE_BYTES = 256 * 1024**2  # read whole only small side files (projects.json); streams have no cap
_BUNDLE_DEPTH = 1

# ---- what a source reads from a file's folder, once per folder ------------------------------------

_passes = threading.local()


@contextmanager
def one_read_per_folder() -> Iterator[None]:
    """While this holds (a sync, an import of a folder), what a source reads from a file's folder
    (`per_folder`) is read once per folder, not once per file: a folder of 5,000 sessions would
    otherwise be listed 5,000 times. Outside it, each call reads afresh (one file imported alone)."""
    if getattr(_passes, "memo", None) is not None:
        yield
        return
    _passes.memo = {}
    try:
        yield
    finally:
        _passes.memo = None


def per_folder(kind: str, folder: Path, read: Callable[[Path], T]) -> T:
    """`read(folder)`, remembered under `kind` while `one_read_per_folder` holds."""
    memo: dict[tuple[str, Path], Any] | None = getattr(_passes, "memo", None)
    if memo is None:
        return read(folder)
    key = (kind, folder)
    if key not in memo:
        memo[key] = read(folder)
    value: T = memo[key]
    return value


# ---- reading files safely -------------------------------------------------------------------------


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


def read_head(path: Path, size: int = 16384) -> str:
    """The start of a file as text, or "" if it cannot be read. For cheap detection."""
    try:
        with open_regular(path) as handle:
            return handle.read(size).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return ""


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


# ---- finding files ---------------------------------------------------------------------------------


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


# ---- exports that arrive as a zip, a folder or one file -----------------------------------------


class Bundle:
    """Named documents of an export: `names()` are base names, `read_text(name)` their decoded text.

    Members are found by base name, at the shallowest depth (exports are often zipped with a top
    folder). Nothing is extracted to disk; the big members are streamed (`open`), small ones read
    whole with a cap."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._members: dict[str, str] = {}
        if path.is_file() and zipfile.is_zipfile(path):
            self.kind = "zip"
            try:
                with zipfile.ZipFile(path) as archive:
                    infos = [info for info in archive.infolist() if not info.is_dir()]
            except (zipfile.BadZipFile, OSError) as exc:
                raise SourceError(f"{path.name} is not a readable zip: {exc}") from exc
            for info in sorted(infos, key=lambda i: (i.filename.count("/"), i.filename)):
                base = info.filename.rsplit("/", 1)[-1]
                if base and not info.filename.startswith("__MACOSX/"):
                    self._members.setdefault(base, info.filename)
        elif path.is_dir():
            self.kind = "dir"
            for found in walk_files(path, _BUNDLE_DEPTH):
                self._members.setdefault(found.name, str(found))
        else:
            self.kind = "file"
            self._members[path.name] = str(path)

    def names(self) -> list[str]:
        return sorted(self._members)

    def has(self, name: str) -> bool:
        return name in self._members

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """A member as a binary stream (read incrementally, so its size does not matter)."""
        member = self._members.get(name)
        if member is None:
            raise SourceError(f"{self.path.name} has no {name}")
        try:
            if self.kind == "zip":
                with zipfile.ZipFile(self.path) as archive, archive.open(member) as handle:
                    yield handle
            else:
                with open_regular(Path(member)) as handle:
                    yield handle
        except (OSError, zipfile.BadZipFile, zlib.error, RuntimeError, EOFError) as exc:
            raise SourceError(f"cannot read {name} from {self.path.name}: {exc}") from exc

    def read_bytes(self, name: str, limit: int | None = None) -> bytes:
        """A member's first `limit` bytes, or the whole of a small member."""
        with self.open(name) as handle:
            data = handle.read(limit if limit is not None else MAX_WHOLE_BYTES + 1)
        if limit is None and len(data) > MAX_WHOLE_BYTES:
            raise SourceError(f"{name} in {self.path.name} is too large to be what it claims to be")
        return data

    def read_text(self, name: str) -> str:
        return self.read_bytes(name).decode("utf-8", "replace").lstrip("\ufeff")

    def head(self, name: str, size: int = 65536) -> str:
        """The start of a member, or "" if it cannot be read (for detection; never raises)."""
        try:
            return self.read_bytes(name, size).decode("utf-8", "replace").lstrip("\ufeff")
        except SourceError:
            return ""


def export_head(path: Path, members: Callable[[Bundle], list[str]]) -> tuple[Bundle, str] | None:
    """For `detect` (never raises): an export's bundle and the start of its first member holding
    conversations (`members` names them), for a zip, a folder or a .json; None for anything else."""
    if path.is_file() and path.suffix.lower() not in {".zip", ".json"}:
        return None
    try:
        bundle = Bundle(path)
    except (SourceError, OSError):
        return None
    found = members(bundle)
    return (bundle, bundle.head(found[0])) if found else None
