"""Our own copy of every agent-log file sync has indexed: `home/archive/<format>/<source path>`.

Claude Code deletes transcripts after 30 days and other agents prune or rewrite theirs; the archive
keeps what was indexed so the chats can be re-imported (`pastchats import home/archive/<format>`) after
the source is gone. The source's absolute path is mirrored below the format's folder (the drive or
root becomes the first part), so two sources never share a copy. The copies hold the logs verbatim
(secrets included): like the whole store, they are their user's alone (`storage.owner_only`). A
source rewritten so that it no longer holds what it did (truncated and written anew) leaves its former
copy beside the new one, as `<name>.earlier-<n>`.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from pathlib import Path, PurePath

from storage.owner_only import make_folder, open_private

__all__ = ["Archive"]

_UNSAFE = re.compile(r'[<>:"|?*\x00-\x1f]')
_BLOCK = 1 << 20


def _safe_part(part: str) -> str:
    part = _UNSAFE.sub("_", part).strip()
    return "_" if part in {"", ".", ".."} else part


def _keep_time(source: Path, copy: Path) -> None:
    """Give the copy its source's modification time: a chat its file gives no times to is dated by
    the file, and read back from the copy it must keep that date."""
    try:
        written = source.stat().st_mtime_ns
        os.utime(copy, ns=(written, written))
    except OSError:
        pass


class Archive:
    def __init__(self, home: Path):
        self.root = home / "archive"

    def relative_for(self, format: str, source: Path) -> str:
        """Where `source`'s copy lives, relative to the archive root (posix, no `..`)."""
        path = PurePath(os.path.abspath(source))
        anchor = _safe_part(path.drive.rstrip(":\\/")) if path.drive else ""
        parts = [_safe_part(format)] + ([anchor] if anchor else []) + [_safe_part(p) for p in path.parts[1:]]
        return "/".join(parts)

    def path(self, relative: str) -> Path:
        return self.root.joinpath(*relative.split("/"))

    def size(self, relative: str) -> int | None:
        try:
            return self.path(relative).stat().st_size
        except OSError:
            return None

    def append(self, source: Path, relative: str, start: int, end: int) -> int:
        """Append source bytes [start, end) to the copy (which must hold exactly `start` bytes).
        Reads only those bytes from the source; returns how many were appended."""
        copied = 0
        with source.open("rb") as src, self.path(relative).open("ab") as dst:
            src.seek(start)
            while copied < end - start:
                block = src.read(min(_BLOCK, end - start - copied))
                if not block:
                    break
                dst.write(block)
                copied += len(block)
            dst.flush()
            os.fsync(dst.fileno())
        _keep_time(source, self.path(relative))
        return copied

    def copy(self, source: Path, relative: str) -> int:
        """Replace the copy with the whole source file; returns its size."""
        target = self.path(relative)
        make_folder(target.parent)
        tmp = target.with_name(target.name + ".tmp")
        with source.open("rb") as src, open(tmp, "wb", opener=open_private) as dst:
            shutil.copyfileobj(src, dst, _BLOCK)
            dst.flush()
            os.fsync(dst.fileno())
        _keep_time(source, tmp)
        os.replace(tmp, target)
        return target.stat().st_size

    def keep_earlier(self, relative: str) -> str | None:
        """Set the copy aside as `<name>.earlier-<n>` (the next free n), before a source that dropped
        part of what it held replaces it: the archive never loses what it held. Returns where, relative."""
        target = self.path(relative)
        if not target.is_file():
            return None
        number = 1
        while (earlier := target.with_name(f"{target.name}.earlier-{number}")).exists():
            number += 1
        os.replace(target, earlier)
        return f"{relative}.earlier-{number}"

    def keep_context(self, source: Path, relative: str) -> int:
        """Keep a small file a session's projects are read from (a registry, a `workspace.json`) up to
        date beside the session's copy; returns the bytes written (0 when it had not changed)."""
        data = source.read_bytes()
        target = self.path(relative)
        try:
            if target.read_bytes() == data:
                return 0
        except OSError:
            pass
        make_folder(target.parent)
        tmp = target.with_name(target.name + ".tmp")
        with open(tmp, "wb", opener=open_private) as dst:
            dst.write(data)
        os.replace(tmp, target)
        return len(data)

    def backup_sqlite(self, source: Path, relative: str) -> None:
        """A consistent copy of a live SQLite database (WAL included), read through a read-only connection."""
        target = self.path(relative)
        make_folder(target.parent)
        tmp = target.with_name(target.name + ".tmp")
        tmp.unlink(missing_ok=True)
        src = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True, timeout=2)
        try:
            dst = sqlite3.connect(tmp)
            try:
                src.backup(dst)
            finally:
                dst.close()
        finally:
            src.close()
        _keep_time(source, tmp)
        os.replace(tmp, target)

    def remove(self, relative: str) -> bool:
        """Delete a copy and the folders it leaves empty; whether there was one."""
        target = self.path(relative)
        try:
            target.unlink()
        except FileNotFoundError:
            return False
        parent = target.parent
        while parent != self.root and self.root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
        return True
