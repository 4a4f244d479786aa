"""Noticing what another process recorded in `store.json`: that it re-embedded the store with another
model (`pastchats model use`: a running server then loads that model, since a query embedded with the
old one would be compared with vectors it did not make), or wrote chats without today's redaction
(`PASTCHATS_REDACT=off`, or older rules: a running server redacts them before it answers again)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from storage.upkeep.store_meta import read_meta


class StoreRecord:
    """`store.json`, re-read only when the file changes (one stat a read)."""

    def __init__(self, home: Path):
        self.path = home / "store.json"
        self._stamp = self._file_stamp()
        self._changing = threading.Lock()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size, info.st_ino

    def follow(self, changed: Callable[[object], bool]) -> None:
        """When the file changed since the last call, call `changed` with the model it names; reads that
        arrive meanwhile wait. `changed` returns False when it could not follow yet (the store is busy):
        the next call tries again."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return
        with self._changing:
            if stamp == self._stamp:
                return
            if changed(read_meta(self.path.parent).get("model")):
                self._stamp = stamp
