"""Exports that arrive as a zip, an unzipped directory or a single JSON file, read the same way.

Members are found by base name, at the shallowest depth (exports are often zipped with a top folder).
Nothing is extracted to disk; members are read one at a time, with a size cap.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from importers._files import walk_files
from importers.base import SourceError

MAX_MEMBER_BYTES = 4 * 1024**3  # a member claiming more than this is not a chat export
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

    def read_bytes(self, name: str, limit: int | None = None) -> bytes:
        member = self._members.get(name)
        if member is None:
            raise SourceError(f"{self.path.name} has no {name}")
        try:
            if self.kind == "zip":
                with zipfile.ZipFile(self.path) as archive:
                    info = archive.getinfo(member)
                    if limit is None and info.file_size > MAX_MEMBER_BYTES:
                        raise SourceError(f"{name} in {self.path.name} is too large ({info.file_size} bytes)")
                    with archive.open(info) as handle:
                        return handle.read(limit) if limit is not None else handle.read()
            with open(member, "rb") as handle:
                return handle.read(limit) if limit is not None else handle.read()
        except (OSError, zipfile.BadZipFile, RuntimeError) as exc:
            raise SourceError(f"cannot read {name} from {self.path.name}: {exc}") from exc

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


class BrokenJson(Exception):
    """A JSON array stopped parsing part way; the items before it were yielded."""


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def iter_json_array(text: str) -> Iterator[Any]:
    """Items of a top-level JSON array, one at a time, so a file cut short still gives its good part.

    Raises BrokenJson (after yielding the readable items) where the text stops being valid.
    """
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BrokenJson(f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
        raise BrokenJson(f"expected a JSON list, found {type(value).__name__}")
    position += 1
    count = 0
    while True:
        position = _skip_space(text, position)
        if text.startswith("]", position):
            return
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise BrokenJson(f"cut off or broken after item #{count} ({exc.msg})") from None
        except RecursionError:
            raise BrokenJson(f"item #{count + 1} is nested too deeply to read") from None
        count += 1
        yield item
        position = _skip_space(text, position)
        if text.startswith(",", position):
            position += 1
        elif not text.startswith("]", position):
            raise BrokenJson(f"cut off or broken after item #{count}")
