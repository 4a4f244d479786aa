"""What `sync` remembers between runs: `home/sync-state.json`.

One mark per agent-log file that sync has read, and the ids the user deleted. Written atomically, and
only under the store's write lock (sync and delete both hold it), so two processes never interleave.

```json
{"version": 1, "reading": 2, "exclusions": "<hash of the exclusion settings the marks were made under>",
 "files": {"/home/ana/.claude/projects/-home-ana-src/6f1c.jsonl": {
     "format": "claude-code", "size": 48213, "mtime_ns": 1737367200123456789,
     "tail_hash": "<blake2b of the 4 KiB before `size`>", "wal": null,
     "archive": "claude-code/home/ana/.claude/projects/-home-ana-src/6f1c.jsonl",
     "conversations": ["claude-code:6f1c"], "error": null}},
 "forgotten": ["codex:0195a1b2-..."]}
```
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

__all__ = ["STATE_FILE", "FileMark", "SyncState", "tail_hash"]

log = logging.getLogger(__name__)

STATE_FILE = "sync-state.json"
# What the importers read from an agent's log, by version: marks made by an older reading stand for
# chats that lack something today's importers read, and every file is read once more. 2: the files each
# tool call edited, created or read and the commands it ran (`Message.touches`).
READING = 2
TAIL_BYTES = 4096


def tail_hash(path: Path, size: int) -> str:
    """Digest of the `TAIL_BYTES` bytes just before offset `size`: tells a file that only grew past
    `size` (same digest) from one that was rewritten (different digest). Reads only those bytes."""
    start = max(0, size - TAIL_BYTES)
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(size - start)
    if len(data) != size - start:
        return ""  # shorter than it was: cannot match any recorded digest
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class FileMark(BaseModel):
    """How far one source file has been read, and where our copy of it lives."""

    format: str
    size: int = Field(ge=0, description="Bytes read (and, for a JSON Lines file, held by the archive copy).")
    mtime_ns: int
    tail_hash: str = ""
    wal: tuple[int, int] | None = Field(default=None, description="SQLite: the -wal file's (size, mtime_ns).")
    archive: str | None = Field(default=None, description="The archive copy, relative to `home/archive`.")
    conversations: list[str] = Field(default_factory=list, description="Ids imported from this file.")
    error: str | None = Field(default=None, description="Why nothing could be imported (not retried until it changes).")
    messages: int | None = Field(default=None, description="Messages its chats held when last read.")
    earlier: bool = Field(
        default=False,
        description="The file once dropped messages the store keeps (rewritten by its agent): each read of it "
        "keeps them beside what it holds.",
    )


class SyncState(BaseModel):
    version: int = 1
    reading: int = Field(default=1, description="What the importers read when the marks were made (`READING`).")
    exclusions: str = ""
    files: dict[str, FileMark] = Field(default_factory=dict)
    forgotten: list[str] = Field(default_factory=list)
    deleting: list[str] = Field(
        default_factory=list,
        description="Ids a delete has committed to (already forgotten) whose rows and archive copies may "
        "still be there: whoever next holds the write lock finishes removing them.",
    )

    @classmethod
    def load(cls, home: Path) -> SyncState:
        """The saved state; an unreadable one is set aside and sync starts afresh (re-parsing is safe:
        unchanged conversations are not re-embedded), except that forgotten ids are lost — so say so."""
        path = home / STATE_FILE
        try:
            return cls.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return cls(reading=READING)
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("%s is unreadable (%s); starting a fresh sync state", path, exc)
            return cls(reading=READING)

    def save(self, home: Path) -> None:
        path = home / STATE_FILE
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(self.model_dump_json(indent=1))  # pydantic's serializer: ~10x json.dump at 1,000 files
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)

    def archive_index(self) -> dict[str, list[str]]:
        """Conversation id → the archive files (relative paths) it was imported from."""
        index: dict[str, list[str]] = {}
        for mark in self.files.values():
            if mark.archive:
                for cid in mark.conversations:
                    index.setdefault(cid, []).append(mark.archive)
        return index

    def forget(self, ids: list[str]) -> None:
        self.forgotten = sorted(set(self.forgotten) | set(ids))

    def unforget(self, ids: list[str]) -> None:
        dropped = set(ids)
        self.forgotten = [cid for cid in self.forgotten if cid not in dropped]
        self.deleting = [cid for cid in self.deleting if cid not in dropped]


def forgotten(home: Path) -> list[str]:
    """The chats deleted in this home that sync must never bring back (nor an exchange with a shared store)."""
    return SyncState.load(home).forgotten
