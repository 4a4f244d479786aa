"""The catalog's read side in the standard library's cheapest parts: `os`, `sqlite3`, `time`.

`pastchats stats` is answered from here without importing pathlib, json, re, logging, typing or
datetime (each costs as much as a bare interpreter start, ~20 ms, on the machines we measure), so
`storage.catalog` (the writer, and the full reader for `recent` and the library) keeps its layout
here and writes plain SQL values rather than JSON. What is trusted, and when, is decided here for
both readers: the catalog file is current when its format is this code's, no delete is half done
(`journal.json`), each LanceDB table's newest manifest is the one it recorded, and `store.json` is
what it recorded (byte for byte). Anything else answers None, and the caller reads LanceDB.
"""

from __future__ import annotations

import os
import sqlite3

FILE = "catalog.sqlite"
# 1: state as JSON values. 2: plain SQL values (read without json), store.json recorded.
# 3: every chat's messages, for `read` and `export`. 4: the store's one read model (per chat, its
# passages' counts too), the LanceDB messages table gone.
FORMAT = 4
TABLES = ("conversations", "chunks")
# storage.store_meta.STORE_FORMAT, which this module cannot import (json, pathlib); a test keeps them
# equal, and a store.json naming any other format is left to the full reader.
STORE_FORMAT = 4
STORE_META = "store.json"
# The chats table's columns but its messages (a listing reads only the preview).
CHAT_COLUMNS = (
    "id, source, title, created, updated, project, url, message_count, version, first_message, last_message, preview"
)
PREVIEW_HEAD = 2  # the opening exchange says what a chat was about
PREVIEW_TAIL = 2  # the last turns say where it ended
JOURNAL = "journal.json"

Stamp = tuple[int, int, int]  # (version, mtime_ns, size) of a table's newest manifest


def table_stamps(lancedb_dir: str) -> dict[str, Stamp] | None:
    """Each table's newest manifest as it is on disk, or None when one cannot be read.

    Lance names manifests `<version>.manifest`, or (its newer scheme, 20 digits) `<u64::MAX -
    version>.manifest` so that a listing finds the newest first. The stat fields tell a table dropped
    and recreated at the same version number (the model changed) from the one that was there before.
    """
    stamps: dict[str, Stamp] = {}
    for table in TABLES:
        folder = os.path.join(lancedb_dir, f"{table}.lance", "_versions")
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        numbers = [int(stem) for name in names if (stem := name[:-9]).isdigit() and name.endswith(".manifest")]
        if not numbers:
            return None
        descending = any(n >= 2**63 for n in numbers)
        number = min(numbers) if descending else max(numbers)
        name = f"{number:020d}.manifest" if descending else f"{number}.manifest"
        try:
            info = os.stat(os.path.join(folder, name))
        except OSError:
            return None
        version = 2**64 - 1 - number if descending else number
        stamps[table] = (version, info.st_mtime_ns, info.st_size)
    return stamps


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def connect(path: str) -> sqlite3.Connection:
    """An open catalog file; mode=rw: never created here (a missing catalog is a miss, not an empty store)."""
    safe = b"/-_.~"
    quoted = "".join(chr(b) if (b < 128 and chr(b).isalnum()) or b in safe else f"%{b:02X}" for b in os.fsencode(path))
    authority = "//" if quoted.startswith("/") else ""  # an absolute path: an empty authority before it
    return sqlite3.connect(f"file:{authority}{quoted}?mode=rw", uri=True, timeout=5, isolation_level=None)


def recorded_stamps(connection: sqlite3.Connection) -> dict[str, Stamp]:
    rows = connection.execute("SELECT name, version, mtime_ns, size FROM stamps").fetchall()
    return {str(name): (int(a), int(b), int(c)) for name, a, b, c in rows}


def state(connection: sqlite3.Connection) -> dict[str, object]:
    return {str(key): value for key, value in connection.execute("SELECT key, value FROM state")}


def deleting(home: str) -> bool:
    """Whether a delete was committed and not finished (a killed `delete`): its chats may still be in
    the tables the catalog matches, and opening the store finishes it."""
    if not os.path.exists(os.path.join(home, JOURNAL)):  # the usual case: no write under way
        return False
    from storage.journal import load_journal  # deferred: json

    return bool(load_journal(os.path.join(home, JOURNAL))["deleting"])


def open_current(home: str, *, store_meta: bool = True, deletes: bool = False) -> sqlite3.Connection | None:
    """The catalog in a read transaction (the caller closes it) when it reflects LanceDB as it is now;
    None when missing, stale, unreadable, or a delete is half done.

    `store_meta`: also require `store.json` to be the one recorded, byte for byte (the lean `stats`
    takes the store's model from the catalog; the full reader reads store.json itself). `deletes`: a
    committed delete does not count (the quick `delete`, holding the lock, leaves out its chats)."""
    path = os.path.join(home, FILE)
    if not os.path.isfile(path) or (not deletes and deleting(home)):
        return None
    try:
        connection = connect(path)
    except sqlite3.Error:
        return None
    try:
        connection.execute("BEGIN")
        values = state(connection)
        stamps = recorded_stamps(connection)
        tables = {t: stamps[t] for t in TABLES if t in stamps}
        fresh = values.get("format") == FORMAT and tables == table_stamps(os.path.join(home, "lancedb"))
        if fresh and store_meta:
            fresh = values.get("store_json") == read_bytes(os.path.join(home, STORE_META))
            fresh = fresh and values.get("store_format") == STORE_FORMAT
    except (sqlite3.Error, ValueError, TypeError):
        fresh = False
    if not fresh:
        connection.close()
        return None
    return connection


def tree_bytes(path: str) -> int:
    """Bytes of every file under `path`, as `pathlib`'s `rglob('*')` finds them (what `stats` reports)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                full = os.path.join(folder, name)
                if os.path.isfile(full):
                    total += os.stat(full).st_size
            except OSError:
                continue
    return total


def column_counts(connection: sqlite3.Connection, column: str) -> dict[str, int]:
    """In the order `LanceStore.column_counts` gave them (value order): `stats` lists ties so."""
    rows = connection.execute("SELECT value, count FROM column_counts WHERE kind = ? ORDER BY position", (column,))
    return {str(value): int(count) for value, count in rows}


def counts(values: dict[str, object]) -> tuple[int, int, int]:
    return int(str(values["conversations"])), int(str(values["messages"])), int(str(values["chunks"]))


def preview_spans(message_count: int) -> list[tuple[int, int]]:
    """Which messages stand for a chat in a listing: its opening exchange and, if longer, its last turns."""
    if message_count == 0:
        return []
    if message_count <= PREVIEW_HEAD + PREVIEW_TAIL:
        return [(0, message_count - 1)]
    return [(0, PREVIEW_HEAD - 1), (message_count - PREVIEW_TAIL, message_count - 1)]


def day(us: int) -> str:
    """`%Y-%m-%d` of a naive-UTC time in microseconds since 1970 (as `datetime` would print it)."""
    import time  # built in: no import cost

    year, month, mday = time.gmtime(us // 1_000_000)[:3]
    return f"{year:04d}-{month:02d}-{mday:02d}"


class LeanStats:
    """What `stats` prints, read from a current catalog (see `server.cli_quick.stats_lines`)."""

    def __init__(self, home: str, connection: sqlite3.Connection, model: str | None):
        values = state(connection)
        self.home = home
        self.conversations, self.messages, self.chunks = counts(values)
        self.sources = column_counts(connection, "source")
        self.projects = column_counts(connection, "project")
        oldest, newest = connection.execute("SELECT min(updated), max(updated) FROM chats").fetchone()
        self.span = f"{day(oldest)} to {day(newest)}" if oldest is not None and newest is not None else "empty"
        stored = values.get("store_model")
        self.model = model or (stored if isinstance(stored, str) else None)
        self.disk_bytes = tree_bytes(os.path.join(home, "lancedb"))
        self.awaiting_embeddings = int(str(values["pending"]))
