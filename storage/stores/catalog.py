"""The catalog: the store's one read model, every chat's metadata and messages beside LanceDB.

`<home>/catalog.sqlite` (stdlib sqlite3) holds one row per chat (its metadata, its messages, the
messages a listing previews, its first and last message times, how many of its passages there are and
how many await their embedding) and the store's totals. Everything a reader shows of a chat comes from
here: `stats`, `recent`, `read`, `export`, and the chats a search shows (the vector matrix and the
keyword index find the passages, this names and quotes them), so no read needs LanceDB.

It is derived state like the keyword index and the vector matrix, rebuilt from the conversations
table whenever it is missing or of another format. The writer brings it in step while it still holds
the write lock, after the tables it reflects have committed (`refresh`), and records which version
of each LanceDB table it reflects (the newest manifest in each table's `_versions/`): `needs_repair`
and every reader (`open_current`) tell from those whether a write was left unfinished. A reader
during a write sees the chats as the last finished write left them.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import zlib
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from storage.errors import StoreError
from storage.reads.listing import PREVIEW_HEAD, PREVIEW_TAIL, preview_spans
from storage.redaction import redaction_counts
from storage.times import naive_utc
from storage.upkeep.store_meta import refuse_newer

if TYPE_CHECKING:  # the pydantic models are imported where used: `stats` needs none (start-up speed)
    from storage.models import Conversation, Message
    from storage.query.filters import Filters
    from storage.reads.chat_meta import ConversationMeta

log = logging.getLogger(__name__)

FILE = "catalog.sqlite"
# 1: state as JSON values. 2: plain SQL values, store.json recorded. 3: every chat's messages, for
# `read` and `export`. 4: the store's one read model (per chat, its passages' counts too), the LanceDB
# messages table gone. 5: the secrets redacted in each chat, by kind. 6: the files and commands each
# chat's tool calls touched (`touches`), and each message's own.
FORMAT = 6
TABLES = ("conversations", "chunks")
JOURNAL = "journal.json"
# The chats table's columns but its messages (a listing reads only the preview).
CHAT_COLUMNS = (
    "id, source, title, created, updated, project, url, message_count, version, first_message, last_message, preview"
)

Stamp = tuple[int, int, int]  # (version, mtime_ns, size) of a table's newest manifest

BATCH = 200  # chats read or written per query
_EPOCH = datetime(1970, 1, 1)  # naive UTC, as LanceDB stores times

# state: the catalog's format and the store's totals;
# stamps: each LanceDB table's newest manifest; column_counts: `stats`' sources and projects, in order;
# redactions: the secrets redacted in each chat, by kind (counted from its placeholders);
# touches: the files each chat's tool calls touched and the commands they ran, how often and where first,
# found by a file's name (`name`: a path's last part; a command's first word).
# Every listing by time reads (updated, id) of every chat, some by project: from this index alone, not
# the table, whose rows hold each chat's messages.
SCHEMA = """
CREATE TABLE state (key TEXT PRIMARY KEY, value);
CREATE TABLE stamps (name TEXT PRIMARY KEY, version INTEGER, mtime_ns INTEGER, size INTEGER);
CREATE TABLE column_counts (kind TEXT, position INTEGER, value TEXT, count INTEGER, PRIMARY KEY (kind, position));
CREATE TABLE chats (
    id TEXT PRIMARY KEY, source TEXT, title TEXT, created INTEGER, updated INTEGER, project TEXT,
    url TEXT, message_count INTEGER, version TEXT, first_message INTEGER, last_message INTEGER,
    preview TEXT NOT NULL, messages BLOB NOT NULL, chunks INTEGER NOT NULL, pending INTEGER NOT NULL
);
CREATE INDEX chats_timeline ON chats (updated, project, id);
CREATE TABLE redactions (id TEXT, source TEXT, kind TEXT, count INTEGER, PRIMARY KEY (id, kind));
CREATE TABLE touches (
    id TEXT, action TEXT, target TEXT, name TEXT COLLATE NOCASE, count INTEGER, position INTEGER,
    PRIMARY KEY (id, action, target)
);
CREATE INDEX touches_by_name ON touches (name);
"""


class Truth(Protocol):
    """What the catalog is derived from (`storage.stores.lance_store.LanceStore`)."""

    path: Path

    def conversation_ids(self) -> list[str]: ...
    def conversation_rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def passage_counts(self, conversation_ids: Sequence[str] | None = None) -> dict[str, tuple[int, int]]: ...
    def to_conversation(self, row: dict[str, Any]) -> Conversation: ...
    def stored_messages(self, row: dict[str, Any]) -> Iterator[Message]: ...
    def chunk_count(self) -> int: ...
    def pending_count(self) -> int: ...


class CatalogMissing(StoreError):
    """No catalog of this pastchats' format: the next holder of the write lock rebuilds it."""


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


def damage(path: Path) -> str | None:
    """Why the catalog file cannot be trusted, from its header alone (None: it looks whole, or there is
    none). A file cut short (a full disk, a copy interrupted) still opens, and fails only on the pages
    it lost: its header says how many pages it should have."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return "it is not an SQLite file"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if size < pages * page_size or size % page_size:
        return f"it is cut short ({size} of {pages * page_size} bytes)"
    return None


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
    from storage.writing.journal import load_journal

    return bool(load_journal(str(home / JOURNAL))["deleting"])


def open_current(home: Path) -> sqlite3.Connection | None:
    """The catalog in a read transaction (the caller closes it) when it reflects LanceDB as it is now;
    None when missing, stale, unreadable, or a delete is half done."""
    path = home / FILE
    if not path.is_file() or deleting(home) or damage(path) is not None:
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


def _aware(us: int | None) -> datetime | None:
    return None if us is None else _time(us)


def _time(us: int) -> datetime:
    return (_EPOCH + timedelta(microseconds=us)).replace(tzinfo=UTC)


class _Held:
    """A chat's messages as the catalog keeps them, gathered one at a time so that a chat of a million
    messages is never held whole: packed as they come (JSON, deflated: a quarter to a third of the size;
    level 1 keeps a rebuild's cost low), the ones a listing previews, and the first and last times."""

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        self._deflate = zlib.compressobj(1)
        self._parts = [self._deflate.compress(b"[")]
        self._head: list[list[Any]] = []  # the opening messages and the last ones: all a preview shows
        self._tail: deque[list[Any]] = deque(maxlen=PREVIEW_TAIL)
        self.touches: dict[tuple[str, str], list[int]] = {}  # (action, target): [count, first position]

    def add(self, message: list[Any]) -> None:
        text = (", " if self.count else "") + json.dumps(message, ensure_ascii=False)
        self._parts.append(self._deflate.compress(text.encode("utf-8")))
        (self._head.append if self.count < PREVIEW_HEAD else self._tail.append)(message)
        self.count += 1
        at = message[4]
        if at is not None:
            self.first = at if self.first is None else min(self.first, at)
            self.last = at if self.last is None else max(self.last, at)

    def packed(self) -> bytes:
        return b"".join([*self._parts, self._deflate.compress(b"]"), self._deflate.flush()])

    def shown(self) -> list[list[Any]]:
        spans = preview_spans(self.count)
        return [m for m in [*self._head, *self._tail] if any(first <= m[1] <= last for first, last in spans)]


def _texts(messages: Iterable[Message], held: _Held) -> Iterator[str]:
    """Each message's text, gathered into `held` on the way: one pass over a stored chat's messages."""
    for m in messages:
        entry: list[Any] = [m.id, m.index, m.role, m.text, _us(m.created_at)]
        if m.touches:
            entry.append([[touch.action, touch.target] for touch in m.touches])
            for touch in m.touches:
                seen = held.touches.setdefault((touch.action, touch.target), [0, len(held.touches)])
                seen[0] += 1
        held.add(entry)
        yield m.text


def touch_name(action: str, target: str) -> str:
    """What a touch is found by: a file's last part (either separator), a command's first word."""
    if action == "ran":
        return target.split(maxsplit=1)[0] if target.strip() else ""
    return target.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _touch_rows(cid: str, held: _Held) -> list[tuple[str, str, str, str, int, int]]:
    return [
        (cid, action, target, touch_name(action, target), count, position)
        for (action, target), (count, position) in held.touches.items()
    ]


def _unpacked(blob: bytes) -> list[list[Any]]:
    return list(json.loads(zlib.decompress(blob).decode("utf-8")))


class Catalog:
    """A consistent read of the catalog (one read transaction)."""

    def __init__(self, home: Path, connection: sqlite3.Connection, model: str):
        self.home = home
        self.model_name = model
        self.path = home / "lancedb"
        self._db = connection
        self._db.row_factory = sqlite3.Row
        self._state = state(connection)

    @classmethod
    @contextmanager
    def open(cls, home: Path, model: str = "", file: Path | None = None) -> Iterator[Catalog]:
        """The catalog as the last finished write left it (raises `CatalogMissing` without one, or when
        it is damaged). `file`: a private catalog built elsewhere (`build_private`)."""
        path = file or home / FILE
        problem = damage(path)
        if problem is not None:
            raise CatalogMissing(f"the catalog in {home} is damaged ({problem})")
        try:
            connection = connect(path)
        except sqlite3.Error as exc:
            raise CatalogMissing(f"no catalog in {home}") from exc
        with closing(connection):
            try:
                connection.execute("BEGIN")
                current = state(connection).get("format") == FORMAT
            except sqlite3.Error as exc:
                raise CatalogMissing(f"the catalog in {home} is unreadable ({exc})") from exc
            if not current:
                raise CatalogMissing(f"the catalog in {home} is of another format")
            yield cls(home, connection, model)

    @classmethod
    @contextmanager
    def read(cls, home: Path, model: str = "") -> Iterator[Catalog | None]:
        """The catalog when it reflects LanceDB as it is now and no delete is half done; None otherwise
        (`open_current`). `model`: the configured model, which `stats` names (as a
        library opened without it does)."""
        refuse_newer(home)  # as opening the store would
        connection = open_current(home)
        if connection is None:
            yield None
            return
        with closing(connection):
            yield cls(home, connection, model)

    # ---- totals --------------------------------------------------------------------------------

    def counts(self, ids: Sequence[str] | None = None) -> tuple[int, int, int]:
        """Conversations, messages and passages (of these chats, or of all)."""
        if ids is None:
            values = self._state
            return int(str(values["conversations"])), int(str(values["messages"])), int(str(values["chunks"]))
        found = [0, 0, 0]
        for batch in self._batches(ids):
            query = f"SELECT count(*), sum(message_count), sum(chunks) FROM chats WHERE id IN ({_marks(batch)})"
            row = self._db.execute(query, batch).fetchone()
            found = [total + int(value or 0) for total, value in zip(found, row, strict=True)]
        return found[0], found[1], found[2]

    def pending_count(self, ids: Sequence[str] | None = None) -> int:
        """Passages awaiting their embedding (of these chats, or of all)."""
        if ids is None:
            return int(str(self._state["pending"]))
        return sum(
            int(self._db.execute(f"SELECT sum(pending) FROM chats WHERE id IN ({_marks(b)})", b).fetchone()[0] or 0)
            for b in self._batches(ids)
        )

    def is_empty(self) -> bool:
        return self.counts()[0] == 0

    def column_counts(self, column: str, excluding: frozenset[str] = frozenset()) -> dict[str, int]:
        """How many chats (not in `excluding`) have each value of `column` (`project` or `source`),
        in value order (`stats` lists ties so)."""
        if not excluding:
            rows = self._db.execute(
                "SELECT value, count FROM column_counts WHERE kind = ? ORDER BY position", (column,)
            )
            return {str(value): int(count) for value, count in rows}
        counts = _column_counts(self._db, column)
        for batch in self._batches(sorted(excluding)):
            query = f"SELECT {column}, count(*) FROM chats WHERE id IN ({_marks(batch)}) GROUP BY {column}"
            for value, count in self._db.execute(query, batch):  # `column` is one of two names, never input
                if value is not None:
                    counts[value] -= count
        return {value: count for value, count in counts.items() if count > 0}

    def redactions(self, excluding: frozenset[str] = frozenset()) -> dict[str, dict[str, int]]:
        """Secrets redacted, per source and kind (most first), in the chats not in `excluding`."""
        totals: dict[str, Counter[str]] = {}
        query = "SELECT source, kind, sum(count) FROM redactions GROUP BY source, kind"
        for source, kind, count in self._db.execute(query):
            totals.setdefault(source, Counter())[kind] += count
        for batch in self._batches(sorted(excluding)):
            rows = self._db.execute(f"SELECT source, kind, count FROM redactions WHERE id IN ({_marks(batch)})", batch)
            for source, kind, count in rows:
                totals[source][kind] -= count
        kept = {source: {k: n for k, n in kinds.most_common() if n > 0} for source, kinds in sorted(totals.items())}
        return {source: kinds for source, kinds in kept.items() if kinds}

    def disk_bytes(self) -> int:
        return tree_bytes(self.path)

    # ---- chats ---------------------------------------------------------------------------------

    def timeline(self, filters: Filters) -> list[tuple[datetime, str]]:
        """(updated_at, id) of every chat passing the filters."""
        clauses, args = self._where(filters)
        rows = self._db.execute(f"SELECT updated, id FROM chats{clauses}", args)  # placeholders only
        return [(_EPOCH + timedelta(microseconds=row["updated"]), row["id"]) for row in rows]

    def activity(self, filters: Filters) -> list[tuple[datetime, str, str, str | None]]:
        """(updated_at, id, source, project) of every chat passing the filters: what a timeline counts.
        The columns come before the messages in each row, so their pages are not read."""
        clauses, args = self._where(filters)
        rows = self._db.execute(f"SELECT updated, id, source, project FROM chats{clauses}", args)
        return [(_time(int(updated)), str(cid), str(source), project) for updated, cid, source, project in rows]

    def redacted_chats(self, limit: int, excluding: frozenset[str] = frozenset()) -> list[tuple[str, dict[str, int]]]:
        """The chats with the most secrets redacted (not in `excluding`), most first, each with its
        counts by kind (most first)."""
        query = "SELECT id FROM redactions GROUP BY id ORDER BY sum(count) DESC, id LIMIT ?"
        ids = [str(row[0]) for row in self._db.execute(query, (limit + len(excluding),)) if row[0] not in excluding]
        ids = ids[:limit]
        kinds: dict[str, dict[str, int]] = {cid: {} for cid in ids}
        for batch in self._batches(ids):
            rows = self._db.execute(
                f"SELECT id, kind, count FROM redactions WHERE id IN ({_marks(batch)}) ORDER BY count DESC, kind", batch
            )
            for cid, kind, count in rows:
                kinds[cid][str(kind)] = int(count)
        return list(kinds.items())

    def time_page(
        self, filters: Filters, n: int, sort_order: Literal["asc", "desc"]
    ) -> tuple[list[tuple[datetime, str]], bool]:
        """`storage.reads.listing.page_by_time` of `timeline(filters)`, read from the timeline index: the first
        `n` chats by (updated, id), then the rest of the last one's `updated`, and whether more follow."""
        clauses, args = self._where(filters)
        order = "DESC" if sort_order == "desc" else "ASC"
        query = f"SELECT updated, id FROM chats{clauses} ORDER BY updated {order}, id {order} LIMIT ?"
        rows = [(int(updated), str(cid)) for updated, cid in self._db.execute(query, [*args, n + 1])]
        if len(rows) > n:
            rows = rows[:n]
            last = rows[-1][0] if rows else None
            beyond = "<" if sort_order == "desc" else ">"
            joined = " AND " if clauses else " WHERE "
            tied = f"SELECT updated, id FROM chats{clauses}{joined}updated = ? AND id {beyond} ? ORDER BY id {order}"
            if last is not None:
                rows += [(int(u), str(c)) for u, c in self._db.execute(tied, [*args, last, rows[-1][1]])]
            more_query = f"SELECT 1 FROM chats{clauses}{joined}updated {beyond} ? LIMIT 1"
            more = last is None or self._db.execute(more_query, [*args, last]).fetchone() is not None
        else:
            more = False
        return [(_EPOCH + timedelta(microseconds=updated), cid) for updated, cid in rows], more

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

    @staticmethod
    def _batches(ids: Sequence[str]) -> Iterator[list[str]]:
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            yield unique[start : start + 500]

    def _rows(self, ids: Sequence[str], columns: str = CHAT_COLUMNS) -> list[sqlite3.Row]:
        found: list[sqlite3.Row] = []
        for batch in self._batches(ids):
            found += self._db.execute(f"SELECT {columns} FROM chats WHERE id IN ({_marks(batch)})", batch).fetchall()
        return found

    def chat_versions(self) -> dict[str, str]:
        """Every chat's version (its fingerprint), by id."""
        return {str(cid): str(version) for cid, version in self._db.execute("SELECT id, version FROM chats")}

    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]:
        return {row["id"]: _meta(row) for row in self._rows(ids)}

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to `limit` chat ids that start with `prefix`, or whose part after the source's name
        (`codex:<this>`) does, in id order: what a shortened uri may name. The first from the primary
        key's order; the second reads every id (a few milliseconds at tens of thousands of chats)."""
        if not prefix:
            return []
        # every id starting with the prefix sorts between it and it followed by the last code point
        found = [
            str(row[0])
            for row in self._db.execute(
                "SELECT id FROM chats WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (prefix, prefix + "\U0010ffff", limit),
            )
        ]
        if found:
            return found
        return [
            str(row[0])
            for row in self._db.execute(
                "SELECT id FROM chats WHERE instr(id, ':') > 0 AND substr(id, instr(id, ':') + 1, ?) = ? "
                "ORDER BY id LIMIT ?",
                (len(prefix), prefix, limit),
            )
        ]

    def message_windows(self, windows: dict[str, list[tuple[int, int]]]) -> dict[str, list[Message]]:
        """Each chat's messages with positions in any of its (first, last) ranges, in order; chats
        without such messages are left out. A listing's preview is read without the whole chat."""

        out: dict[str, list[Message]] = {}
        for row in self._rows(list(windows), "id, message_count, preview, messages"):
            spans = windows[row["id"]]
            previewed = all(span in preview_spans(row["message_count"]) for span in spans)
            held = json.loads(row["preview"]) if previewed else _unpacked(row["messages"])
            for entry in held:
                if any(first <= entry[1] <= last for first, last in spans):
                    out.setdefault(row["id"], []).append(_message(entry))
        return out

    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]:
        """(first, last) message time of each chat that has message times at all."""
        return {
            row["id"]: (_time(row["first_message"]), _time(row["last_message"]))
            for row in self._rows(ids, "id, first_message, last_message")
            if row["first_message"] is not None
        }

    # ---- the files and commands chats touched --------------------------------------------------

    def touches(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """Each chat's touches as (action, target, times), edits first, then files read, then commands;
        each kind in the order the chat first touched them."""
        order = {"edited": 0, "created": 0, "read": 1, "ran": 2}
        found: dict[str, list[tuple[int, int, str, str, int]]] = {}
        for batch in self._batches(ids):
            query = f"SELECT id, action, target, count, position FROM touches WHERE id IN ({_marks(batch)})"
            for cid, action, target, count, position in self._db.execute(query, batch):
                found.setdefault(cid, []).append((order.get(action, 3), position, action, target, count))
        return {cid: [(a, t, n) for _, _, a, t, n in sorted(rows)] for cid, rows in found.items()}

    def touching(self, path: str) -> set[str]:
        """The chats whose tool calls edited, created or read the file `path`: a whole path, or its
        last parts (`session.py`, `auth/session.py`), in either separator and any case."""
        wanted = _path_key(path)
        if not wanted:
            return set()
        name = wanted.rsplit("/", 1)[-1]
        rows = self._db.execute("SELECT id, target FROM touches WHERE name = ? AND action != 'ran'", (name,))
        return {str(cid) for cid, target in rows if (key := _path_key(target)) == wanted or key.endswith("/" + wanted)}

    # ---- `read` and `export`, as `Library.read_chat` and `Library.iter_conversations` --------

    def _messages(self, cid: str) -> list[list[Any]]:
        row = self._db.execute("SELECT messages FROM chats WHERE id = ?", (cid,)).fetchone()
        return _unpacked(row[0]) if row is not None else []

    def message_range(self, conversation_id: str, first: int, last: int) -> list[Message]:
        return _message_models([m for m in self._messages(conversation_id) if first <= m[1] <= last])

    def message_position(self, conversation_id: str, message_id: str) -> int | None:
        found = [int(m[1]) for m in self._messages(conversation_id) if m[0] == message_id]
        return found[0] if found else None

    def conversation(self, conversation_id: str) -> Conversation | None:
        """The whole chat, or None."""
        return next(self._conversations([conversation_id]), None)

    def iter_conversations(
        self, *, project: str | None = None, source: str | None = None, ids: list[str] | None = None
    ) -> Iterator[Conversation]:
        """As `Library.iter_conversations`: in id order, streamed a batch at a time."""
        from storage.query.filters import Filters

        clauses, args = self._where(Filters(project=project, source=source))
        found = sorted(row[0] for row in self._db.execute(f"SELECT id FROM chats{clauses}", args))
        if ids is not None:
            wanted = set(ids)
            found = [cid for cid in found if cid in wanted]
        for start in range(0, len(found), BATCH):
            yield from self._conversations(found[start : start + BATCH])

    def _conversations(self, ids: list[str]) -> Iterator[Conversation]:
        from storage.models import Conversation

        rows = {row["id"]: row for row in self._rows(ids, f"{CHAT_COLUMNS}, messages")}
        for cid in ids:
            if (row := rows.get(cid)) is None:
                continue
            yield Conversation(
                id=cid,
                source=row["source"],
                title=row["title"],
                created_at=_time(row["created"]),
                updated_at=_time(row["updated"]),
                project=row["project"],
                url=row["url"],
                messages=_message_models(_unpacked(row["messages"])),
            )


def _path_key(path: str) -> str:
    """A path as `touching` compares it: one separator, no `./` before it or `/` after it, any case."""
    key = path.strip().replace("\\", "/").casefold()
    while key.startswith("./"):
        key = key[2:]
    return key.rstrip("/")


def _marks(batch: Sequence[object]) -> str:
    return ", ".join("?" for _ in batch)


def _meta(row: sqlite3.Row) -> ConversationMeta:
    from storage.reads.chat_meta import ConversationMeta

    times = {"created_at": _time(row["created"]), "updated_at": _time(row["updated"])}
    return ConversationMeta.from_row({**dict(row), **times})


def _message_models(held: list[list[Any]]) -> list[Message]:
    return [_message(entry) for entry in held]


def _message(entry: list[Any]) -> Message:
    """A message as the catalog holds it: [id, index, role, text, time] and, when its tool calls
    touched anything, [[action, target], ...]."""
    from storage.models import Message, Touch

    mid, index, role, text, created = entry[:5]
    touches = tuple(Touch(action, target) for action, target in entry[5]) if len(entry) > 5 else ()
    return Message(id=mid, index=index, role=role, text=text, created_at=_aware(created), touches=touches)


def _column_counts(connection: sqlite3.Connection, column: str) -> dict[str, int]:
    """How many chats have each value of `column`, in value order."""
    query = f"SELECT {column}, count(*) FROM chats WHERE {column} IS NOT NULL GROUP BY {column}"
    return dict(sorted((str(value), int(count)) for value, count in connection.execute(query)))


# ---- writing (the writer, holding the write lock) ------------------------------------------------


def recorded_stamps(home: Path) -> dict[str, Stamp] | None:
    """The table versions the catalog reflects (None: no usable catalog)."""
    if damage(home / FILE) is not None:
        return None
    try:
        with closing(connect(home / FILE)) as connection:
            if state(connection).get("format") != FORMAT:
                return None
            return _stamps_in(connection)
    except (sqlite3.Error, ValueError, TypeError):
        return None


def refresh(home: Path, store: Truth, ids: Sequence[str] | None) -> None:
    """Bring the catalog in step with `store`: re-read the chats `ids` (all of them when None) from
    the conversations table. Never fails the write it follows: on an error the catalog keeps what it
    held, with the table versions it recorded then, and the next holder of the write lock rebuilds it."""
    try:
        stamps = table_stamps(store.path)  # before reading: never newer than what was read
        if stamps is None:
            raise OSError(f"cannot read the table versions in {store.path}")
        if ids is None:
            _rebuild(home, store, stamps)
        else:
            _update(home, store, stamps, ids)
    except Exception as exc:  # a derived index must not fail the write it follows
        log.warning("could not update the catalog (%s); the next write or open rebuilds it", exc)
        with suppress(OSError, sqlite3.Error), closing(connect(home / FILE)) as connection:
            connection.execute("DELETE FROM stamps")  # reflects no table version: rebuilt whole next time


def _chat_rows(
    store: Truth, ids: Sequence[str]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Catalog rows for these chats, from the conversations table and the passages' counts, and their
    redactions' and touches' rows."""
    from storage.models import in_order  # pydantic: readers of a current catalog never load it

    stored = store.conversation_rows(ids)
    passages = store.passage_counts(list(stored))
    rows = []
    redacted: list[tuple[str, str, str, int]] = []
    touched: list[tuple[str, str, str, str, int, int]] = []
    for cid in ids:
        if cid not in stored:
            continue
        held = _Held()
        try:  # the chat without its messages, then its messages one at a time: bounded by one message
            conversation = store.to_conversation({**stored[cid], "messages_json": "[]"})
            messages = in_order(store.stored_messages(stored[cid]))
            found = redaction_counts(chain([conversation.title], _texts(messages, held)))
        except ValueError as exc:  # a row that no longer validates: repair sets it aside
            log.warning("%s cannot be read (%s); left out of the catalog", cid, exc)
            continue
        chunks, pending = passages.get(cid, (0, 0))
        redacted.extend((cid, conversation.source, kind, n) for kind, n in found.items())
        touched.extend(_touch_rows(cid, held))
        rows.append(
            (
                cid,
                conversation.source,
                conversation.title,
                _us(conversation.created_at),
                _us(conversation.updated_at),
                conversation.project,
                conversation.url,
                held.count,
                stored[cid]["version"],
                held.first,
                held.last,
                json.dumps(held.shown(), ensure_ascii=False),
                held.packed(),
                chunks,
                pending,
            )
        )
    return rows, redacted, touched


def _write_state(connection: sqlite3.Connection, home: Path, store: Truth, stamps: dict[str, Stamp]) -> None:
    """The totals and the table versions as they are. The passages are counted in the table: a crash
    may leave some whose chat is gone, until repair."""
    conversations, messages = connection.execute("SELECT count(*), sum(message_count) FROM chats").fetchone()
    chunks, pending = store.chunk_count(), store.pending_count()
    state = {
        "format": FORMAT,
        "conversations": conversations,
        "messages": messages or 0,
        "chunks": chunks or 0,
        "pending": pending or 0,
    }
    connection.execute("DELETE FROM state")
    connection.executemany("INSERT INTO state VALUES (?, ?)", list(state.items()))
    connection.execute("DELETE FROM stamps")
    connection.executemany("INSERT INTO stamps VALUES (?, ?, ?, ?)", [(t, *v) for t, v in stamps.items()])
    connection.execute("DELETE FROM column_counts")
    for kind in ("source", "project"):
        rows = [(kind, i, value, n) for i, (value, n) in enumerate(_column_counts(connection, kind).items())]
        connection.executemany("INSERT INTO column_counts VALUES (?, ?, ?, ?)", rows)


def _write(connection: sqlite3.Connection, store: Truth, ids: Sequence[str], *, fresh: bool = False) -> None:
    insert = f"INSERT INTO chats VALUES ({', '.join('?' * 15)})"
    for start in range(0, len(ids), BATCH):
        batch = list(ids[start : start + BATCH])
        if not fresh:
            connection.execute(f"DELETE FROM chats WHERE id IN ({_marks(batch)})", batch)
            connection.execute(f"DELETE FROM redactions WHERE id IN ({_marks(batch)})", batch)
            connection.execute(f"DELETE FROM touches WHERE id IN ({_marks(batch)})", batch)
        chats, redacted, touched = _chat_rows(store, batch)
        connection.executemany(insert, chats)
        connection.executemany("INSERT INTO redactions VALUES (?, ?, ?, ?)", redacted)
        connection.executemany("INSERT INTO touches VALUES (?, ?, ?, ?, ?, ?)", touched)


def _rebuild(home: Path, store: Truth, stamps: dict[str, Stamp], target: Path | None = None) -> None:
    target = target or home / FILE
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        with closing(sqlite3.connect(tmp, isolation_level=None)) as connection:
            connection.executescript(SCHEMA)
            connection.execute("BEGIN")
            _write(connection, store, store.conversation_ids(), fresh=True)
            _write_state(connection, home, store, stamps)
            connection.execute("COMMIT")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def build_private(home: Path, store: Truth) -> Path:
    """A catalog of the store as it is now, built outside the store (removed when this process ends),
    for a reader that cannot rebuild the store's own: the store is read-only, or a writer holds the
    lock. Reads never wait for a writer."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="pastchats-catalog-"))
    atexit.register(shutil.rmtree, folder, True)
    stamps = table_stamps(store.path) or {}
    _rebuild(home, store, stamps, folder / FILE)
    return folder / FILE


def _update(home: Path, store: Truth, stamps: dict[str, Stamp], ids: Sequence[str]) -> None:
    with closing(connect(home / FILE)) as connection:
        connection.execute("BEGIN IMMEDIATE")
        _write(connection, store, sorted(set(ids)))
        _write_state(connection, home, store, stamps)
        connection.execute("COMMIT")
