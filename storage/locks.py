"""One writer at a time across processes, and a journal that lets the next writer repair a crash.

Reads never take the lock. A write names the conversations it is about to touch in the journal before it
starts and clears it when every index has committed; whoever next holds the lock re-derives those
conversations from the truth (the `conversations` table), so a kill at any point heals.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from storage.errors import StoreBusy


class WriteLock:
    def __init__(self, home: Path):
        self._lock = FileLock(str(home / "write.lock"))
        self.journal_path = home / "journal.json"
        # Every id named by `begin` in this process: what a hold wrote, for the catalog to re-read.
        self.touched: list[str] = []

    @contextmanager
    def hold(self, timeout: float = -1) -> Iterator[None]:
        """Wait for the lock (forever by default; 0 = don't wait). Raises StoreBusy on timeout."""
        try:
            self._lock.acquire(timeout=timeout)
        except Timeout:
            raise StoreBusy from None
        try:
            yield
        finally:
            self._lock.release()

    def pending(self) -> list[str]:
        try:
            data = json.loads(self.journal_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return []
        return [str(x) for x in data.get("conversations", [])] if isinstance(data, dict) else []

    def begin(self, ids: list[str]) -> None:
        self.touched.extend(ids)
        self._save(sorted(set(self.pending()) | set(ids)))

    def done(self, ids: list[str] | None = None) -> None:
        """Every index has committed these ids (all, by default); the rest stay for the next repair."""
        left = [] if ids is None else sorted(set(self.pending()) - set(ids))
        if left:
            self._save(left)
        else:
            self.journal_path.unlink(missing_ok=True)

    def _save(self, ids: list[str]) -> None:
        tmp = self.journal_path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump({"conversations": ids}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.journal_path)
