"""Owner-only files: what pastchats keeps (chats, agents' logs, the indexes made of them) is readable
by the user it belongs to and nobody else on the machine.

On POSIX that is folders 0700 and files 0600. Files are born that way: every entry point sets the
umask first (`restrict_new_files`), which is the one setting LanceDB's and Tantivy's native code, SQLite
and Python all honour; the folders pastchats creates at its roots (the store, its model cache) are
made 0700 explicitly, so that even a process that never set the umask keeps their contents private.
A store written before (0755 folders, 0644 files), or loosened since, is tightened when it is opened
(`tighten`), and `pastchats doctor` reports what is still open to others (`exposed`).

On Windows modes mean almost nothing (chmod only sets the read-only flag): the store lives in the
user's %LOCALAPPDATA%, which its ACL already keeps private, and everything here does nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "exposed", "make_folder", "open_private", "restrict_new_files", "tighten"]

POSIX = os.name != "nt"
FOLDER_MODE = 0o700
FILE_MODE = 0o600
OTHERS = 0o077  # the group's and everyone else's bits: none of them is set on what pastchats keeps


def restrict_new_files() -> None:
    """From here on, everything this process (and every process it starts) creates is owner-only,
    whichever code creates it. Called once, first thing, by every entry point."""
    if POSIX:
        os.umask(os.umask(OTHERS) | OTHERS)  # keep any stricter bits the user's umask already had


def make_folder(path: Path) -> Path:
    """`path` and any missing parents, created owner-only (an existing folder is left as it is)."""
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    return path


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """An `opener` for `open()`: a file it creates is owner-only, whatever the umask."""
    return os.open(path, flags, FILE_MODE)


def exposed(root: Path) -> Iterator[Path]:
    """`root` and everything below it that other users may read, write or enter. Links are not
    followed (what one points to is not pastchats'), and entries of another owner are left out (only
    their owner can change them). One `lstat` an entry, ~4-7 µs: a 100k-message store is ~100 entries."""
    if not POSIX:
        return
    uid = os.getuid()
    try:
        info = root.stat()  # the store itself may be a link to where the user keeps it
    except OSError:
        return
    if info.st_uid == uid and info.st_mode & OTHERS:
        yield root
    folders = [str(root)] if stat.S_ISDIR(info.st_mode) else []
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:  # gone meanwhile (a writer replaced it), or not ours to read
            continue
        with entries:
            for entry in entries:
                try:
                    found = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISLNK(found.st_mode):
                    continue
                if found.st_uid == uid and found.st_mode & OTHERS:
                    yield Path(entry.path)
                if stat.S_ISDIR(found.st_mode):
                    folders.append(entry.path)


def tighten(root: Path) -> int:
    """Take the group's and others' access away from `root` and everything below it; the owner's own
    bits stay as they are (a read-only file stays read-only). Returns how many entries changed."""
    changed = 0
    for path in exposed(root):
        try:
            os.chmod(path, stat.S_IMODE(path.stat().st_mode) & ~OTHERS)
        except OSError:
            continue
        changed += 1
    return changed
