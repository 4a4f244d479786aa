"""The catalog: what `stats` and `recent` show, kept beside LanceDB so they answer without importing it.

`<home>/catalog.sqlite` (stdlib sqlite3) holds one row per chat (its metadata, the messages a listing
shows, its first and last message times) and the store's totals, all read through the same
`LanceStore` methods that `stats` and `recent` use otherwise: the two paths cannot answer differently.
It is derived state like the keyword index and the vector matrix: the writer refreshes it while it
still holds the write lock, after the tables it reflects have committed, and records which version of
each LanceDB table it reflects (the newest manifest in each table's `_versions/`). A reader trusts it
only when those are still the newest manifests on disk (a directory listing and a `stat` per table);
otherwise, or when the file is missing or unreadable, the caller answers from LanceDB, and the next
open that gets the write lock rebuilds the catalog.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from storage.recent import StoreStats, preview_spans, recent_page, store_stats
from storage.store_meta import read_meta, refuse_newer
from storage.times import naive_utc

if TYPE_CHECKING:  # the pydantic models are imported where used: `stats` needs none (start-up speed)
    from storage.filters import Filters
    from storage.hits import ConversationMeta
    from storage.lance_store import LanceStore
    from storage.models import Conversation, Message
    from storage.results import ChatPage, RecentResult

log = logging.getLogger(__name__)

FILE = "catalog.sqlite"
# 1: state as JSON values. 2: plain SQL values, store.json recorded. 3: every chat's messages, for
# `read` and `export`.
FORMAT = 3
TABLES = ("conversations", "messages", "chunks")
STORE_META = "store.json"
JOURNAL = "journal.json"
# The chats table's columns but its messages (a listing reads only the preview).
CHAT_COLUMNS = (
    "id, source, title, created, updated, project, url, message_count, version, first_message, last_message, preview"
)

Stamp = tuple[int, int, int]  # (version, mtime_ns, size) of a table's newest manifest

BATCH = 200  # chats read from LanceDB per query when rebuilding
_EPOCH = datetime(1970, 1, 1)  # naive UTC, as LanceDB stores times

# state: format, the store's totals, store.json as recorded (its bytes, format and model);
# stamps: each LanceDB table's newest manifest; column_counts: `stats`' sources and projects, in order.
# Every listing by time reads (updated, id) of every chat, some by project: from this index alone, not
# the table, whose rows hold each chat's messages (at 480k messages, 32,806 chats: 262 -> 77 ms, and by
# project 134 -> 10 ms). Catalogs written before it get it on their next write.
TIMELINE_INDEX = "CREATE INDEX IF NOT EXISTS chats_timeline ON chats (updated, project, id)"
SCHEMA = f"""
CREATE TABLE state (key TEXT PRIMARY KEY, value);
CREATE TABLE stamps (name TEXT PRIMARY KEY, version INTEGER, mtime_ns INTEGER, size INTEGER);
CREATE TABLE column_counts (kind TEXT, position INTEGER, value TEXT, count INTEGER, PRIMARY KEY (kind, position));
CREATE TABLE chats (
    id TEXT PRIMARY KEY, source TEXT, title TEXT, created INTEGER, updated INTEGER, project TEXT,
    url TEXT, message_count INTEGER, version TEXT, first_message INTEGER, last_message INTEGER,
    preview TEXT NOT NULL, messages BLOB NOT NULL
);
{TIMELINE_INDEX};
"""


def table_stamps(lancedb_dir: Path) -> dict[str, Stamp] | None:
    """Each table's newest manifest as it is on disk, or None when one cannot be read.

    Lance names manifests `<version>.manifest`, or (its newer scheme, 20 digits) `<u64::MAX -
    version>.manifest` so that a listing finds the newest first. The stat fields tell a table dropped
    and recreated at the same version number (the model changed) from the one that was there before.
    """
    stamps: dict[str, Stamp] = {}
    for table in TABLES:
        folder = lancedb_dir / f"{table}.lance" / "_versions"
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
            info = os.stat(folder / name)
        except OSError:
            return None
        version = 2**64 - 1 - number if descending else number
        stamps[table] = (version, info.st_mtime_ns, info.st_size)
    return stamps


def connect(path: Path) -> sqlite3.Connection:
    """An open catalog file; mode=rw: never created here (a missing catalog is a miss, not an empty store)."""
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=5, isolation_level=None)


def _stamps_in(connection: sqlite3.Connection) -> dict[str, Stamp]:
    rows = connection.execute("SELECT name, version, mtime_ns, size FROM stamps").fetchall()
    return {str(name): (int(a), int(b), int(c)) for name, a, b, c in rows}


def state(connection: sqlite3.Connection) -> dict[str, object]:
    return {str(key): value for key, value in connection.execute("SELECT key, value FROM state")}


def deleting(home: Path) -> bool:
    """Whether a delete was committed and not finished (a killed `delete`): its chats may still be in
    the tables the catalog matches, and opening the store finishes it."""
    if not (home / JOURNAL).exists():  # the usual case: no write under way
        return False
    from storage.journal import load_journal

    return bool(load_journal(str(home / JOURNAL))["deleting"])


def open_current(home: Path) -> sqlite3.Connection | None:
    """The catalog in a read transaction (the caller closes it) when it reflects LanceDB as it is now;
    None when missing, stale, unreadable, or a delete is half done."""
    path = home / FILE
    if not path.is_file() or deleting(home):
        return None
    try:
        connection = connect(path)
    except sqlite3.Error:
        return None
    try:
        connection.execute("BEGIN")
        stamps = _stamps_in(connection)
        tables = {t: stamps[t] for t in TABLES if t in stamps}
        fresh = state(connection).get("format") == FORMAT and tables == table_stamps(home / "lancedb")
    except (sqlite3.Error, ValueError, TypeError):
        fresh = False
    if not fresh:
        connection.close()
        return None
    return connection


def tree_bytes(path: Path) -> int:
    """Bytes of every file under `path` (what `stats` reports)."""
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


def _us(value: datetime | None) -> int | None:
    naive = naive_utc(value)
    return None if naive is None else (naive - _EPOCH) // timedelta(microseconds=1)


def _naive(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def _aware(us: int | None) -> datetime | None:
    return None if us is None else _time(us)


def _time(us: int) -> datetime:
    return (_EPOCH + timedelta(microseconds=us)).replace(tzinfo=UTC)


def _packed(messages: list[list[Any]]) -> bytes:
    """A chat's messages as stored: JSON, deflated (a quarter to a third of the size; level 1 keeps a
    rebuild's cost low)."""
    return zlib.compress(json.dumps(messages, ensure_ascii=False).encode("utf-8"), 1)


def _unpacked(blob: bytes) -> list[list[Any]]:
    return list(json.loads(zlib.decompress(blob).decode("utf-8")))


class Catalog:
    """A consistent read of the catalog (one read transaction), valid for the LanceDB state it names.

    Answers the `LanceStore` read methods that `stats` and `recent` use, with the same values.
    """

    def __init__(self, home: Path, connection: sqlite3.Connection, model: str):
        self.home = home
        self.model_name = model
        self.path = home / "lancedb"
        self._db = connection
        self._db.row_factory = sqlite3.Row
        self._state = state(connection)

    @classmethod
    @contextmanager
    def read(cls, home: Path, model: str = "") -> Iterator[Catalog | None]:
        """The catalog when it reflects LanceDB as it is now; None when missing, stale or unreadable
        (`open_current`). `model`: the configured model, which `stats` names (as
        a library opened without it does)."""
        refuse_newer(home)  # as opening the store would
        connection = open_current(home)
        if connection is None:
            yield None
            return
        with closing(connection):
            yield cls(home, connection, model)

    def recent(
        self,
        *,
        n: int = 3,
        sort_order: Literal["asc", "desc"] = "desc",
        before: datetime | None = None,
        after: datetime | None = None,
        project: str | None = None,
    ) -> RecentResult:
        """As `Library.recent`."""
        return recent_page(self, n=n, sort_order=sort_order, before=before, after=after, project=project)

    def stats(self) -> StoreStats:
        """As `Library.stats`."""
        return store_stats(self, self.home, self.model_name)

    # ---- the LanceStore read methods, from the catalog ---------------------------------------

    def counts(self) -> tuple[int, int, int]:
        values = self._state
        return int(str(values["conversations"])), int(str(values["messages"])), int(str(values["chunks"]))

    def pending_count(self) -> int:
        return int(str(self._state["pending"]))

    def is_empty(self) -> bool:
        return self.counts()[0] == 0

    def column_counts(self, column: str) -> dict[str, int]:
        # In the order `LanceStore.column_counts` gave them (value order): `stats` lists ties so.
        rows = self._db.execute("SELECT value, count FROM column_counts WHERE kind = ? ORDER BY position", (column,))
        return {str(value): int(count) for value, count in rows}

    def disk_bytes(self) -> int:
        return tree_bytes(self.path)

    def timeline(self, filters: Filters) -> list[tuple[datetime, str]]:
        clauses, args = self._where(filters)
        rows = self._db.execute(f"SELECT updated, id FROM chats{clauses}", args)  # placeholders only
        return [(_EPOCH + timedelta(microseconds=row["updated"]), row["id"]) for row in rows]

    @staticmethod
    def _where(filters: Filters) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if filters.projects is not None:
            clauses.append(f"project IN ({', '.join('?' for _ in filters.projects)})")
            args += list(filters.projects)
        if filters.source is not None:
            clauses += ["source = ?"]
            args += [filters.source]
        if filters.after is not None:
            clauses += ["updated > ?"]
            args += [_us(filters.after)]
        if filters.before is not None:
            clauses += ["updated < ?"]
            args += [_us(filters.before)]
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def _rows(self, ids: Sequence[str]) -> list[sqlite3.Row]:
        found: list[sqlite3.Row] = []
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ", ".join("?" for _ in batch)
            query = f"SELECT {CHAT_COLUMNS} FROM chats WHERE id IN ({marks})"
            found += self._db.execute(query, batch).fetchall()
        return found

    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]:
        from storage.hits import ConversationMeta

        return {
            row["id"]: ConversationMeta.from_row(
                {**dict(row), "created_at": _time(row["created"]), "updated_at": _time(row["updated"])}
            )
            for row in self._rows(ids)
        }

    def message_windows(self, windows: dict[str, list[tuple[int, int]]]) -> dict[str, list[Message]]:
        from storage.models import Message

        out: dict[str, list[Message]] = {}
        for row in self._rows(list(windows)):
            spans = windows[row["id"]]
            for mid, index, role, text, created in json.loads(row["preview"]):
                if any(first <= index <= last for first, last in spans):
                    message = Message(id=mid, index=index, role=role, text=text, created_at=_aware(created))
                    out.setdefault(row["id"], []).append(message)
        return out

    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]:
        return {
            row["id"]: (_time(row["first_message"]), _time(row["last_message"]))
            for row in self._rows(ids)
            if row["first_message"] is not None
        }

    # ---- `read` and `export`, as `Library.read_chat` and `Library.iter_conversations` --------

    def _messages(self, cid: str) -> list[Message]:
        row = self._db.execute("SELECT messages FROM chats WHERE id = ?", (cid,)).fetchone()
        return self._message_models(_unpacked(row[0]) if row is not None else [])

    def message_range(self, conversation_id: str, first: int, last: int) -> list[Message]:
        return [m for m in self._messages(conversation_id) if first <= m.index <= last]

    def message_position(self, conversation_id: str, message_id: str) -> int | None:
        row = self._db.execute("SELECT messages FROM chats WHERE id = ?", (conversation_id,)).fetchone()
        found = [int(m[1]) for m in (_unpacked(row[0]) if row is not None else []) if m[0] == message_id]
        return found[0] if found else None

    def read_chat(self, uri: str, *, offset: int = 0, limit: int = 40, around: str | int | None = None) -> ChatPage:
        """As `Library.read_chat` (`storage.reading.read_chat` on this catalog)."""
        from storage.reading import read_chat

        return read_chat(self, uri, offset=offset, limit=limit, around=around)

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None, ids: list[str] | None = None
    ) -> Iterator[Conversation]:
        """As `Library.iter_conversations`: in id order, streamed a batch at a time."""
        from storage.filters import Filters
        from storage.models import Conversation

        if ids is not None:
            raise NotImplementedError("the catalog lists chats by project and source only")
        clauses, args = self._where(Filters(project=project, source=source))
        found = sorted(row[0] for row in self._db.execute(f"SELECT id FROM chats{clauses}", args))
        for start in range(0, len(found), BATCH):
            batch = found[start : start + BATCH]
            marks = ", ".join("?" for _ in batch)
            query = f"SELECT {CHAT_COLUMNS}, messages FROM chats WHERE id IN ({marks})"
            rows = {row["id"]: row for row in self._db.execute(query, batch)}
            for cid in batch:
                row = rows[cid]
                yield Conversation(
                    id=cid,
                    source=row["source"],
                    title=row["title"],
                    created_at=_time(row["created"]),
                    updated_at=_time(row["updated"]),
                    project=row["project"],
                    url=row["url"],
                    messages=self._message_models(_unpacked(row["messages"])),
                )

    @staticmethod
    def _message_models(held: list[list[Any]]) -> list[Message]:
        from storage.models import Message

        return [
            Message(id=mid, index=index, role=role, text=text, created_at=_aware(created))
            for mid, index, role, text, created in held
        ]


# ---- writing (the writer, holding the write lock) ------------------------------------------------


def recorded_stamps(home: Path) -> dict[str, Stamp] | None:
    """The table versions the catalog reflects (None: no usable catalog)."""
    try:
        with closing(connect(home / FILE)) as connection:
            if state(connection).get("format") != FORMAT:
                return None
            return _stamps_in(connection)
    except (sqlite3.Error, ValueError, TypeError):
        return None


def refresh(home: Path, store: LanceStore, ids: Sequence[str] | None) -> None:
    """Bring the catalog in step with `store`: re-read the chats `ids` (all of them when None, or
    when there is no current catalog to update). Never fails the write it follows: on any error the
    catalog is removed, and readers answer from LanceDB until the next refresh rebuilds it."""
    try:
        stamps = table_stamps(store.path)  # before reading: never newer than what was read
        if stamps is None:
            raise OSError(f"cannot read the table versions in {store.path}")
        if ids is None:
            _rebuild(home, store, stamps)
        else:
            _update(home, store, stamps, ids)
    except Exception as exc:  # a derived index must not fail the write it follows
        log.warning("could not update the catalog (%s); stats and recent read LanceDB until it is rebuilt", exc)
        with suppress(OSError):  # left behind, its recorded versions no longer match: it is not used
            (home / FILE).unlink(missing_ok=True)


def _write_state(connection: sqlite3.Connection, home: Path, store: LanceStore, stamps: dict[str, Stamp]) -> None:
    """The totals, the table versions and store.json as they are (what the lean `stats` trusts)."""
    conversations, messages, chunks = store.counts()
    try:
        raw: bytes | None = (home / STORE_META).read_bytes()
    except OSError:
        raw = None
    meta = read_meta(home) if raw is not None else {}  # read after the bytes: a change since is a miss
    model, store_format = meta.get("model"), meta.get("format")
    state = {
        "format": FORMAT,
        "conversations": conversations,
        "messages": messages,
        "chunks": chunks,
        "pending": store.pending_count(),
        "store_json": raw,
        "store_model": model if isinstance(model, str) else None,
        "store_format": store_format if isinstance(store_format, int) else None,
    }
    connection.execute("DELETE FROM state")
    connection.executemany("INSERT INTO state VALUES (?, ?)", list(state.items()))
    connection.execute("DELETE FROM stamps")
    connection.executemany("INSERT INTO stamps VALUES (?, ?, ?, ?)", [(t, *v) for t, v in stamps.items()])
    connection.execute("DELETE FROM column_counts")
    for kind in ("source", "project"):
        rows = [(kind, i, value, n) for i, (value, n) in enumerate(store.column_counts(kind).items())]
        connection.executemany("INSERT INTO column_counts VALUES (?, ?, ?, ?)", rows)


def _chat_rows(store: LanceStore, ids: Sequence[str], *, everything: bool = False) -> list[tuple[Any, ...]]:
    """Catalog rows for these chats, read through the methods `recent` and `read` themselves use;
    `everything` (all chats): the messages in one pass over the table instead, the same values."""
    metas = store.metas(ids)
    times: dict[str, tuple[int | None, int | None]]
    if everything:
        messages, found = _one_pass(store)
        times = dict(found)
    else:
        whole = {cid: [(0, meta.message_count - 1)] for cid, meta in metas.items() if meta.message_count}
        messages = {
            cid: [[m.id, m.index, m.role, m.text, _us(m.created_at)] for m in ms]
            for cid, ms in store.message_windows(whole).items()
        }
        times = {cid: (_us(a), _us(b)) for cid, (a, b) in store.message_spans(list(metas)).items()}
    rows = []
    for cid, meta in metas.items():
        spans = preview_spans(meta.message_count)
        held = messages.get(cid, [])
        shown = [m for m in held if any(first <= int(m[1]) <= last for first, last in spans)]
        first, last = times.get(cid, (None, None))
        rows.append(
            (
                cid,
                meta.source,
                meta.title,
                _us(meta.created_at),
                _us(meta.updated_at),
                meta.project,
                meta.url,
                meta.message_count,
                meta.version,
                first,
                last,
                json.dumps(shown, ensure_ascii=False),
                _packed(held),
            )
        )
    return rows


def _one_pass(store: LanceStore) -> tuple[dict[str, list[list[Any]]], dict[str, tuple[int, int]]]:
    """Each chat's messages in position order, and its first and last message times."""
    messages: dict[str, list[list[Any]]] = {}
    times: dict[str, tuple[int, int]] = {}
    for row in store.message_rows(["conversation_id", "id", "position", "role", "text", "created_at"]):
        cid, when = row["conversation_id"], _us(row["created_at"])
        messages.setdefault(cid, []).append([row["id"], row["position"], row["role"], row["text"], when])
        if when is not None:
            first_at, last_at = times.get(cid, (when, when))
            times[cid] = (min(first_at, when), max(last_at, when))
    for held in messages.values():
        held.sort(key=lambda message: int(message[1]))
    return messages, times


def _write(
    connection: sqlite3.Connection,
    home: Path,
    store: LanceStore,
    stamps: dict[str, Stamp],
    ids: Sequence[str],
    *,
    everything: bool = False,
) -> None:
    insert = f"INSERT INTO chats VALUES ({', '.join('?' * 13)})"
    if everything:  # a new file: nothing to delete, and the messages are read in one pass
        connection.executemany(insert, _chat_rows(store, ids, everything=True))
    else:
        for start in range(0, len(ids), BATCH):
            batch = list(ids[start : start + BATCH])
            marks = ", ".join("?" for _ in batch)
            connection.execute(f"DELETE FROM chats WHERE id IN ({marks})", batch)
            connection.executemany(insert, _chat_rows(store, batch))
    _write_state(connection, home, store, stamps)


def _rebuild(home: Path, store: LanceStore, stamps: dict[str, Stamp]) -> None:
    tmp = home / f"{FILE}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    try:
        with closing(sqlite3.connect(tmp, isolation_level=None)) as connection:
            connection.executescript(SCHEMA)
            connection.execute("BEGIN")
            _write(connection, home, store, stamps, store.conversation_ids(), everything=True)
            connection.execute("COMMIT")
        os.replace(tmp, home / FILE)
    finally:
        tmp.unlink(missing_ok=True)


def _update(home: Path, store: LanceStore, stamps: dict[str, Stamp], ids: Sequence[str]) -> None:
    with closing(connect(home / FILE)) as connection:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(TIMELINE_INDEX)
        _write(connection, home, store, stamps, sorted(set(ids)))
        connection.execute("COMMIT")
