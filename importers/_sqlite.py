"""The SQLite databases agents keep their chats in (Cursor, OpenCode, Crush, Goose, Zed, Amazon Q): telling
one by its first bytes, opening it read-only beside the running agent, reading its JSON columns, and
`DatabaseImporter`, what the importer of an agent that keeps its chats in such databases derives from."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from importers._common import UnknownCounts, note_unknown
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation

__all__ = [
    "MAX_VALUE_BYTES",
    "DatabaseImporter",
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


class DatabaseImporter(AgentLogImporter):
    """An agent that keeps its chats in SQLite databases: it names its database files
    (`database_name`, or `is_database`), the tables they must hold, what one is called in a report and
    where a path holds none, and reads the chats of one open database (`read_database`). Telling a
    database from its first bytes, opening each read-only, and skipping one that cannot be opened, lacks
    the tables or breaks part way (the others are still read) are the same for every such agent."""

    database = True
    database_name: ClassVar[str] = ""
    tables: ClassVar[frozenset[str]]
    # "a Crush database": said of a database that lacks the tables.
    kind: ClassVar[str]
    # The error when a path holds no database: "no Zed threads database (threads.db) in {path}".
    none_found: ClassVar[str]

    def is_database(self, file: Path) -> bool:
        """Whether `file` is named as one of the agent's databases (its bytes are checked apart)."""
        return file.name == self.database_name

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return self.is_database(path) and is_sqlite(path)
        return path.is_dir() and any(is_sqlite(f) for f in self.session_files(path))

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        databases = [path] if path.is_file() else self.session_files(path)
        if not databases:
            raise SourceError(self.none_found.format(path=path))
        unknown: UnknownCounts = {}
        yield from read_databases(
            databases,
            report,
            set(self.tables),
            self.kind,
            lambda database, where, connection: self.read_database(connection, where, database, report, unknown),
            where=lambda database: self.where(path, database),
        )
        note_unknown(report, unknown)

    def where(self, path: Path, database: Path) -> str:
        """How a report names `database`, found at `path`."""
        return database.name

    def read_database(
        self, connection: sqlite3.Connection, where: str, database: Path, report: ImportReport, unknown: UnknownCounts
    ) -> Iterator[Conversation]:
        """The chats of one open database that holds `tables` (`where`: its name in the report)."""
        raise NotImplementedError
