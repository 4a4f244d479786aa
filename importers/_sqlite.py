"""The SQLite databases agents keep their chats in (Cursor, OpenCode, Crush, Goose, Zed): telling one
by its first bytes, opening it read-only beside the running agent, and reading its JSON columns."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importers.base import ImportReport
    from storage.models import Conversation

__all__ = [
    "MAX_VALUE_BYTES",
    "Oversized",
    "bounded_value",
    "connect",
    "is_sqlite",
    "json_value",
    "read_databases",
    "table_names",
]

_MAGIC = b"SQLite format 3\x00"
# The most one value of an agent's database may hold to be read (a chat's message, parts or thread,
# decompressed too): far more than any chat writes, and small enough that reading and parsing it keeps
# an import well within memory whatever a damaged or hostile row declares.
MAX_VALUE_BYTES = 64 * 1024**2


class Oversized(ValueError):
    """A value larger than MAX_VALUE_BYTES, left unread."""

    def __init__(self, size: int):
        super().__init__(
            f"it holds {size / 1024**2:,.0f} MB, more than the {MAX_VALUE_BYTES // 1024**2} MB a chat is read up to"
        )


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def connect(database: Path) -> sqlite3.Connection:
    """A read-only connection; whatever the damage, failing raises sqlite3.Error (the one error the
    importers report a database by). Text that is not UTF-8 reads with U+FFFD in place of bad bytes."""
    uri = database.resolve().as_uri() + "?mode=ro"
    try:
        try:
            return _opened(sqlite3.connect(uri, uri=True, timeout=0.5))  # a lock held longer: read a snapshot
        except sqlite3.OperationalError:
            # Locked by the running agent: read the file as it is, without taking locks.
            return _opened(sqlite3.connect(uri + "&immutable=1", uri=True))
    except (ValueError, OverflowError, MemoryError) as exc:
        raise sqlite3.DatabaseError(f"damaged ({exc})") from None


def _opened(connection: sqlite3.Connection) -> sqlite3.Connection:
    connection.text_factory = _text
    connection.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    return connection


def bounded_value(connection: sqlite3.Connection, table: str, column: str, rowid: int) -> object:
    """One value, its size checked before it is read: TEXT and BLOB come as bytes (Oversized when larger
    than MAX_VALUE_BYTES), anything else as SQLite gives it. A plain SELECT would load the whole value
    first, even to measure it."""
    try:
        blob = connection.blobopen(table, column, rowid, readonly=True)
    except sqlite3.OperationalError:  # NULL or a number (or a table without rowids): small, read as it is
        row = connection.execute(f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
        return row[0] if row else None
    with blob:
        if len(blob) > MAX_VALUE_BYTES:
            raise Oversized(len(blob))
        return blob.read()


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


def read_databases(
    databases: Iterable[Path],
    report: ImportReport,
    tables: set[str],
    what: str,
    read: Callable[[Path, str, sqlite3.Connection], Iterator[Conversation]],
    where: Callable[[Path], str] = lambda database: database.name,
) -> Iterator[Conversation]:
    """The chats `read` finds in each database that opens and holds `tables`. A database that cannot be
    opened, is not `what` (an agent's database lacking its tables) or breaks part way is reported
    skipped, by the name `where` gives it, and the others are still read."""
    for database in databases:
        name = where(database)
        try:
            connection = connect(database)
        except sqlite3.Error as exc:
            report.skip(name, f"cannot open the database: {exc}")
            continue
        try:
            missing = tables - table_names(connection)
            if missing:
                report.skip(name, f"not {what} (no {' or '.join(sorted(missing))} table)")
                continue
            yield from read(database, name, connection)
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            # ValueError: a value SQLite hands back that Python cannot take (an integer out of range).
            report.skip(name, f"the database could not be read to the end: {exc}")
        finally:
            connection.close()
