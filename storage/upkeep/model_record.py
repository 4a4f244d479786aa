"""Noticing that another process re-embedded the store with another model (`pastchats model use`):
`store.json` names it. A running server then loads that model, since a query embedded with the old
one would be compared with vectors it did not make."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from storage.upkeep.store_meta import read_meta


class ModelRecord:
    """The model `store.json` names, re-read only when the file changes (one stat a search)."""

    def __init__(self, home: Path):
        self.path = home / "store.json"
        self._stamp = self._file_stamp()
        self._switching = threading.Lock()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size, info.st_ino

    def follow(self, current: str, switch: Callable[[str], None]) -> None:
        """When the file changed since the last call and names another model than `current`, call
        `switch` with it; searches that arrive meanwhile wait for the switch."""
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return
        with self._switching:
            if stamp == self._stamp:
                return
            stored = read_meta(self.path.parent).get("model")
            if isinstance(stored, str) and stored != current:
                switch(stored)
            self._stamp = stamp
