"""The SQLite databases agents keep their chats in (Cursor, OpenCode, Crush, Goose, Zed): telling one
by its first bytes, opening it read-only beside the running agent, and reading its JSON columns."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["connect", "is_sqlite", "json_value", "table_names"]

_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def connect(database: Path) -> sqlite3.Connection:
    uri = database.resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=0.5)  # a lock held longer: read a snapshot
        connection.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        return connection
    except sqlite3.OperationalError:
        # Locked by the running agent: read the file as it is, without taking locks.
        connection = sqlite3.connect(uri + "&immutable=1", uri=True)
        connection.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        return connection


def table_names(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def json_value(value: object) -> Any:
    """A JSON column's value (text or bytes); None when it is not JSON."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    try:
        return json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):
        return None
