"""`journal.json`: what a write or a delete began and did not finish (`storage.writing.locks` keeps it).

Apart from the lock so that a reader (the catalog, for `stats` and `recent`) can read it without
taking the lock.
"""

from __future__ import annotations

import json
import os

FILE = "journal.json"
LISTS = ("conversations", "deleting", "deleted")


def load_journal(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The journal's lists (each empty when missing); a missing or unreadable journal is empty."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.loads(handle.read())
    except (FileNotFoundError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    out: dict[str, list[str]] = {}
    for name in LISTS:
        value = data.get(name)
        out[name] = [x for x in value if isinstance(x, str)] if isinstance(value, list) else []
    return out


def save_journal(path: str, data: dict[str, list[str]]) -> None:
    """Replace the journal atomically (fsynced); an empty journal is no file. Callers hold the write lock."""
    if not any(data.values()):
        if os.path.exists(path):  # callers hold the lock: nobody else removes it meanwhile
            os.unlink(path)
        return
    tmp = path[: -len(".json")] + ".tmp" if path.endswith(".json") else path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({name: data[name] for name in LISTS if data.get(name)}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class DeletedWatch:
    """The chats a delete has committed to (`deleting`) or finished on a caller's behalf (`deleted`):
    what no reader may show, whatever an index still holds. Re-read only when the file changes, so a
    long-lived server pays one stat per request (a delete made by another process shows at once)."""

    def __init__(self, home: str):
        self.path = os.path.join(home, FILE)
        self._stamp: tuple[int, int, int] | None = None
        self._ids: frozenset[str] = frozenset()

    def ids(self) -> frozenset[str]:
        try:
            info = os.stat(self.path)
        except OSError:
            self._stamp, self._ids = None, frozenset()  # the usual case: nothing under way
            return self._ids
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        if stamp != self._stamp:
            data = load_journal(self.path)
            self._ids = frozenset(data["deleting"]) | frozenset(data["deleted"])
            self._stamp = stamp
        return self._ids
