"""Exports that arrive as a zip, an unzipped directory or a single JSON file, read the same way.

Members are found by base name, at the shallowest depth (exports are often zipped with a top folder).
Nothing is extracted to disk; the big members are streamed (`open`), small ones read whole with a cap.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from importers._files import open_regular, walk_files
from importers._json import BrokenJson, Malformed, iter_json_array
from importers.base import SourceError

__all__ = ["BrokenJson", "Bundle", "Malformed", "iter_json_array", "open_bundle"]

MAX_WHOLE_BYTES = 256 * 1024**2  # read whole only small side files (projects.json); streams have no cap
_DIR_DEPTH = 1


class Bundle:
    """Named documents of an export: `names()` are base names, `read_text(name)` their decoded text."""

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
            for found in walk_files(path, _DIR_DEPTH):
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


def open_bundle(path: Path) -> Bundle | None:
    """A bundle, or None when the path cannot be opened as one (for `detect`, which must not raise)."""
    try:
        return Bundle(path)
    except (SourceError, OSError):
        return None
