"""LanceDB tables: `conversations` (the truth: metadata and the messages as JSON) and `chunks` (the
retrieval units and their vectors, derived: rebuilt from a conversation row whenever they disagree).

Every derived row carries the `version` (fingerprint) of the conversation it was built from.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import ijson
from pydantic import TypeAdapter

if TYPE_CHECKING:  # pyarrow and NumPy are imported where tables and vectors are made: reads of the catalog need neither
    import pyarrow as pa

from storage.embedding.embedder import Vectors
from storage.errors import StoreDamaged
from storage.models import Conversation, Message
from storage.query.filters import Filters, sql_in, sql_string
from storage.stores.vector_matrix import META_COLUMNS as MATRIX_COLUMNS
from storage.stores.vector_matrix import SCAN_THREADS, VectorMatrix
from storage.times import naive_utc
from storage.units.passages import NO_EMBEDDING, Chunk
from storage.writing.locks import Readers

# How a message is read from and written to its chat's `messages_json` (`Message` is a dataclass).
MESSAGE = TypeAdapter(Message)

log = logging.getLogger(__name__)

# While any reader is mid-read (`Readers`), an old version's files are deleted only once a newer
# version has existed for this long. A query reads the version that was newest when it began, to its
# end, whatever is committed meanwhile; under load one query took well over 5 s, so a reader lost a
# file to cleanup mid-read (`bench/performance/read_stress.py` reproduces it). No query takes
# minutes; and a read that still loses a file is retried once at the newest version
# (`_survives_cleanup`), whose files no cleanup deletes. With no reader at all, every version but
# the newest goes at once.
CLEANUP_GRACE = timedelta(minutes=10)
# LanceDB measures a version's age from its own clock reading, taken a moment after ours: versions this
# close to the cut are kept for the next cleanup rather than risk deleting one superseded too recently.
CLEANUP_MARGIN = timedelta(minutes=1)

_MANIFEST = re.compile(r"^(\d+)\.manifest$")

P = ParamSpec("P")
R = TypeVar("R")


def newest_version(table: Path) -> int | None:
    """The newest version of a Lance table as its `_versions/` folder names it, which is what LanceDB
    reads with a consistency interval of 0, found without importing LanceDB; None if unreadable.
    Lance names manifests `<version>.manifest`, or (its newer scheme, 20 digits) `<u64::MAX -
    version>.manifest`, so that a listing finds the newest first."""
    try:
        numbers = [int(m.group(1)) for name in os.listdir(table / "_versions") if (m := _MANIFEST.match(name))]
    except OSError:
        return None
    if not numbers:
        return None
    return 2**64 - 1 - min(numbers) if any(n >= 2**63 for n in numbers) else max(numbers)


def damage_of(error: BaseException) -> str | None:
    """Why a table could not be read, when the cause is its files (a manifest lost or garbled, a data
    file cut short or gone); None for any other failure."""
    if isinstance(error, StoreDamaged):
        return str(error)
    text = " ".join(str(error).split())
    if isinstance(error, ValueError) and "was not found" in text:
        return "its version manifest is missing"
    if isinstance(error, (RuntimeError, OSError, ValueError)) and "lance error" in text.lower():
        cut = text.split(", /")[0]  # Lance appends the Rust source position of the error
        return cut.removeprefix("lance error: ")[:200]
    return None


def vanished_file(error: BaseException) -> bool:
    """Whether a read failed because a file of the version it began on was deleted under it."""
    text = str(error).lower()
    return isinstance(error, (RuntimeError, OSError, ValueError)) and ("not found" in text or "no such file" in text)


def _survives_cleanup(method: Callable[Concatenate[LanceStore, P], R]) -> Callable[Concatenate[LanceStore, P], R]:
    """Run a read again, once, if an old version's cleanup deleted a file under it.

    Reads take no lock (they must never wait for a writer). With a read consistency interval of 0 the
    second attempt starts from the newest version, and the newest version's files are never deleted; a
    second loss would need another whole commit, compaction and `CLEANUP_GRACE` within that one read.
    """

    def read(self: LanceStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with self.readers.reading():
                return method(self, *args, **kwargs)
        except (RuntimeError, OSError, ValueError) as error:
            if not vanished_file(error):
                raise
            log.info("a read lost a file to old-version cleanup (%s); reading the newest version", error)
            with self.readers.reading():
                return method(self, *args, **kwargs)

    functools.update_wrapper(read, method)
    return read


def conversation_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("source", pa.string()),
            pa.field("title", pa.string()),
            pa.field("created_at", pa.timestamp("us")),
            pa.field("updated_at", pa.timestamp("us")),
            pa.field("project", pa.string()),
            pa.field("url", pa.string()),
            pa.field("message_count", pa.int32()),
            pa.field("version", pa.string()),
            pa.field("messages_json", pa.large_string()),
        ]
    )


# The rows that have a vector: not awaiting their embedding, and not kept for keyword search only
# (tool output, acknowledgements: `storage.units.passages.embeds`).
VECTOR_ROWS = f"NOT pending AND embed_key != {sql_string(NO_EMBEDDING)}"


def _chunk_schema(dim: int) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("conversation_id", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("first_index", pa.int32()),
            pa.field("last_index", pa.int32()),
            pa.field("message_ids", pa.list_(pa.string())),
            pa.field("embed_key", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            # Stored and keyword-indexed, not embedded yet: left out of vector search until it is.
            pa.field("pending", pa.bool_()),
            pa.field("source", pa.string()),
            pa.field("project", pa.string()),
            pa.field("updated_at", pa.timestamp("us")),
            # The time of the unit's message (its chat's updated_at when the source gave none): the
            # time window of conversation_search selects messages, not whole chats.
            pa.field("at", pa.timestamp("us")),
            pa.field("version", pa.string()),
        ]
    )


def unit_time(conversation: Conversation, first_index: int) -> datetime | None:
    """When a retrieval unit was said: its first message's time, or the chat's last update."""
    message = conversation.messages[first_index] if first_index < len(conversation.messages) else None
    return naive_utc(message.created_at if message is not None and message.created_at else conversation.updated_at)


@dataclass(frozen=True)
class UnitHit:
    """A retrieval unit returned by one leg: which chunk, in which chat, covering which messages.

    The vector leg fills `similarity` (cosine, -1..1); the keyword leg fills `text` (the unit's text, to
    tell which query terms it holds) and `tool` (the unit is tool output). Both are evidence for how good
    a match is; ranks alone are not.
    """

    chunk_id: str
    conversation_id: str
    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    similarity: float | None = None
    text: str | None = None
    tool: bool = False


META_COLUMNS = [
    "id",
    "source",
    "title",
    "created_at",
    "updated_at",
    "project",
    "url",
    "message_count",
    "version",
]


HIT_COLUMNS = ["id", "conversation_id", "first_index", "last_index", "message_ids"]


def _unit_hit(row: dict[str, Any], similarity: float | None = None) -> UnitHit:
    ids = tuple(row["message_ids"])
    return UnitHit(row["id"], row["conversation_id"], row["first_index"], row["last_index"], ids, similarity)


def _scored_hits(best: list[tuple[float, int]], table: pa.Table) -> list[tuple[float, UnitHit]]:
    """The vector leg's hits from their rows' columns (`HIT_COLUMNS`), each with its similarity: column by
    column, not row dictionaries (a third of the conversion's time for 600 rows)."""
    columns = [table.column(name).to_pylist() for name in HIT_COLUMNS]
    return [
        (score, UnitHit(chunk_id, chat, first, last, tuple(ids), score))
        for (score, _), chunk_id, chat, first, last, ids in zip(best, *columns, strict=True)
    ]


def _messages_column(conversations: Sequence[Conversation]) -> pa.Array:
    """Each conversation's messages as one JSON array (as `json.dumps` of the list writes it), written
    one message at a time into one buffer that Arrow takes as it is: a chat of a million messages is
    never held as a million dictionaries, nor as a Python string and its copy."""
    import pyarrow as pa

    data = bytearray()
    offsets = [0]
    for conversation in conversations:
        data += b"["
        for position, message in enumerate(conversation.messages):
            data += b", " if position else b""
            data += json.dumps(MESSAGE.dump_python(message, mode="json"), ensure_ascii=False).encode("utf-8")
        data += b"]"
        offsets.append(len(data))
    starts = pa.array(offsets, pa.int64()).buffers()[1]
    return pa.LargeStringArray.from_buffers(len(conversations), starts, pa.py_buffer(data))


def conversation_rows(conversations: Sequence[Conversation], versions: Mapping[str, str]) -> pa.Table:
    """The conversations as rows of the `conversations` table."""
    import pyarrow as pa

    columns: dict[str, list[Any]] = {
        "id": [c.id for c in conversations],
        "source": [c.source for c in conversations],
        "title": [c.title for c in conversations],
        "created_at": [naive_utc(c.created_at) for c in conversations],
        "updated_at": [naive_utc(c.updated_at) for c in conversations],
        "project": [c.project for c in conversations],
        "url": [c.url for c in conversations],
        "message_count": [len(c.messages) for c in conversations],
        "version": [versions[c.id] for c in conversations],
    }
    schema = conversation_schema()
    arrays = [pa.array(columns[f.name], f.type) for f in schema if f.name != "messages_json"]
    return pa.Table.from_arrays([*arrays, _messages_column(conversations)], schema=schema)


@dataclass
class _Tables:
    db: Any
    conversations: Any  # None while the table cannot be opened (`LanceStore.damaged` says why)
    chunks: Any


TABLE_NAMES = ("conversations", "chunks")


# Each of LanceDB's two caches (scalar index pages; table metadata) holds at most this much. The
# indexes the reads use (conversation ids, embed keys) take a few MB at 100k messages.
LANCE_CACHE_BYTES = 32 << 20


class LanceStore:
    """The LanceDB tables, and the vector matrix derived from `chunks` (`storage.stores.vector_matrix`).

    Vector search is exact: over the memory-mapped matrix when there is one (milliseconds), else over
    LanceDB's own flat scan. No ANN index is built: LanceDB's reached only ~0.9 recall@10 here.

    What a search shows of its chats comes from the catalog (`storage.reads.catalog_view`), never from
    here. LanceDB is imported and its tables opened on first use, not here: while the vector matrix is
    current, reads never need it, and it costs ~1.3 s of CPU to import and ~95 MB of memory to hold.
    """

    def __init__(self, path: Path, dim: int, matrix_dir: Path | None = None):
        self.path = path
        self.dim = dim
        self.matrix = VectorMatrix(matrix_dir or path.parent / "vectors", dim)
        self.readers = Readers(path.with_name(path.name + ".readers"))
        self._version_cache: tuple[int, int] | None = None
        self._lance_tables: _Tables | None = None
        self._opening = threading.Lock()
        # Tables that could not be opened, and why; tables this process had to create (their folder
        # was missing): the library restores both before anything is derived from them.
        self.damaged: dict[str, str] = {}
        self.created: set[str] = set()

    @property
    def lance_opened(self) -> bool:
        """Whether LanceDB was needed so far (a reader served by the derived files never opens it)."""
        return self._lance_tables is not None

    def connect(self) -> None:
        """Open the tables now (noting any that is damaged or had to be created)."""
        self._lance()

    def _lance(self) -> _Tables:
        tables = self._lance_tables
        if tables is None:
            with self._opening:
                if self._lance_tables is None:
                    self._lance_tables = self._connect()
                tables = self._lance_tables
        return tables

    @property
    def _db(self) -> Any:
        return self._lance().db

    @property
    def conversations(self) -> Any:
        return self._table("conversations")

    @property
    def chunks(self) -> Any:
        return self._table("chunks")

    def _table(self, name: str) -> Any:
        table = getattr(self._lance(), name)
        if table is None:
            raise StoreDamaged(self.damage_text(name))
        return table

    def damage_text(self, name: str) -> str:
        reason = self.damaged.get(name, "it cannot be opened")
        return f"the {name} table in {self.path} is damaged ({reason}); `pastchats doctor --fix` repairs it"

    def _connect(self) -> _Tables:
        os.environ.setdefault("LANCEDB_LOG", "error")  # its Rust side logs warnings to stderr otherwise
        import lancedb  # here, not at the top: opening a store that reads only the derived files skips it

        # Interval 0: every read sees the other processes' latest commits (a manifest check, ~1 ms).
        # LanceDB's caches, bounded: by default they keep every version's metadata an import commits
        # (41 → 150 MB over a 100k-message import's embedding, most of it versions long superseded).
        session = lancedb.Session(index_cache_size_bytes=LANCE_CACHE_BYTES, metadata_cache_size_bytes=LANCE_CACHE_BYTES)
        db = lancedb.connect(str(self.path), read_consistency_interval=timedelta(0), session=session)
        existing = set(db.list_tables().tables)
        tables = _Tables(
            db, self._open_or_note(db, "conversations", existing), self._open_or_note(db, "chunks", existing)
        )
        if tables.chunks is not None:
            self._add_unit_times(tables.chunks)
        return tables

    def _schema(self, name: str) -> pa.Schema:
        return conversation_schema() if name == "conversations" else _chunk_schema(self.dim)

    def _open_or_note(self, db: Any, name: str, existing: set[str]) -> Any:
        """The table, or None with the reason in `damaged` when its files cannot be read."""
        try:
            return self._open(db, name, self._schema(name), existing)
        except Exception as exc:
            reason = damage_of(exc)
            if reason is None:
                raise
            self.damaged[name] = reason
            log.warning("the %s table in %s cannot be opened: %s", name, self.path, reason)
            return None

    def _open(self, db: Any, name: str, schema: pa.Schema, existing: set[str]) -> Any:
        if name not in existing:
            if (self.path / f"{name}.lance").exists():  # listed or not, a folder with files is no new table
                raise StoreDamaged(f"the {name} table's folder holds no readable version")
            self.created.add(name)
            return db.create_table(name, schema=schema, exist_ok=True)
        table = db.open_table(name)
        if "pending" in schema.names and "pending" not in table.schema.names:  # from before passages could wait
            table.add_columns({"pending": "false"})
        return table

    @staticmethod
    def _add_unit_times(chunks: Any) -> None:
        """A store written before units carried their message's time gets the column, filled with the
        chat's updated_at; the library then re-derives the chats so each unit gets its own time."""
        if "at" not in chunks.schema.names:
            chunks.add_columns({"at": "updated_at"})

    @_survives_cleanup
    def chunk_dim(self) -> int:
        return int(self.chunks.schema.field("vector").type.list_size)

    def reset_chunks(self, dim: int) -> None:
        """Drop every vector (the model changed): the chunks are re-derived from the conversations."""
        self.matrix.drop()
        tables = self._lance()
        tables.db.drop_table("chunks")
        self.dim = dim
        self.matrix.dim = dim
        tables.chunks = tables.db.create_table("chunks", schema=_chunk_schema(dim))

    def ensure_indexes(self) -> None:
        """Scalar indexes that keep filtered reads cheap as the store grows. Safe to call again."""
        from lancedb.index import BTree

        wanted = [
            (self.conversations, "id"),
            (self.chunks, "conversation_id"),
            (self.chunks, "embed_key"),
        ]
        for table, column in wanted:
            names = {tuple(ix.columns) for ix in table.list_indices()}
            if (column,) not in names and table.count_rows() > 0:
                table.create_index(column, config=BTree())

    # ---- the vector matrix (derived; rebuilt by writers, who hold the write lock) -------------

    @_survives_cleanup
    def chunks_version(self) -> int:
        """The `chunks` table's latest version, without a LanceDB call while nothing was committed.

        Asking LanceDB costs a few ms (a manifest check on its event loop). Every commit adds a file to
        `_versions/`, changing the folder's mtime; a cached answer is only trusted once that mtime is
        older than the clock's coarsest tick, so two commits within one tick cannot hide the second.
        """
        try:
            stamp = (self.path / "chunks.lance" / "_versions").stat().st_mtime_ns
        except OSError:
            return int(self.chunks.version)
        cached = self._version_cache
        if cached is not None and cached[0] == stamp:
            return cached[1]
        # The newest manifest on disk is the version LanceDB reads (interval 0), found without it.
        on_disk = newest_version(self.path / "chunks.lance")
        version = on_disk if on_disk is not None else int(self.chunks.version)
        settled = time.time_ns() - stamp > 50_000_000
        self._version_cache = (stamp, version) if settled else None
        return version

    def matrix_needs_build(self) -> bool:
        return self.matrix.needs_build(int(self.chunks.version))

    def build_matrix(self) -> int:
        """Rewrite the matrix from the `chunks` table as it is now. Returns its row count."""
        import pyarrow as pa

        version = int(self.chunks.version)
        query = self.chunks.search().where(VECTOR_ROWS).select([*MATRIX_COLUMNS, "vector"]).limit(None)
        schema = pa.schema([_chunk_schema(self.dim).field(name) for name in MATRIX_COLUMNS])
        return self.matrix.build(query.to_batches(8192), version, schema)

    # ---- reads (writers, and the vector leg without a current matrix) ---------------------------

    @_survives_cleanup
    def versions(self, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            rows = self.conversations.search().where(sql_in("id", batch)).select(["id", "version"])
            for row in rows.limit(None).to_arrow().to_pylist():
                out[row["id"]] = row["version"]
        return out

    @_survives_cleanup
    def conversation_rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored rows as they are (not validated): what repair reads, so one bad row cannot stop it."""
        if not ids:
            return {}
        rows = self.conversations.search().where(sql_in("id", list(ids))).limit(None).to_arrow().to_pylist()
        return {row["id"]: row for row in rows}

    @staticmethod
    def to_conversation(row: dict[str, Any]) -> Conversation:
        return Conversation(
            id=row["id"],
            source=row["source"],
            title=row["title"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            project=row["project"],
            url=row["url"],
            messages=[MESSAGE.validate_python(m) for m in json.loads(row["messages_json"])],
        )

    @staticmethod
    def stored_messages(row: dict[str, Any]) -> Iterator[Message]:
        """A stored chat's messages, parsed from its JSON one at a time and checked as a conversation
        checks them (`to_conversation` validates the rest of the row): a chat of a million messages is
        never all in memory at once as dictionaries and models."""
        try:
            for item in ijson.items(row["messages_json"].encode("utf-8"), "item"):
                yield MESSAGE.validate_python(item)
        except ijson.JSONError as exc:  # as `json.loads` would: a row that does not validate
            raise ValueError(f"its messages are not valid JSON ({exc})") from None

    @_survives_cleanup
    def conversation_ids(self, where: str | None = None) -> list[str]:
        query = self.conversations.search().select(["id"]).limit(None)
        if where:
            query = query.where(where)
        return sorted(row["id"] for row in query.to_arrow().to_pylist())

    @_survives_cleanup
    def passage_counts(self, conversation_ids: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """(passages, passages awaiting their embedding) of each conversation that has any."""
        query = self.chunks.search().select(["conversation_id", "pending"]).limit(None)
        if conversation_ids is not None:
            if not conversation_ids:
                return {}
            query = query.where(sql_in("conversation_id", list(conversation_ids)))
        table = query.to_arrow()
        out: dict[str, tuple[int, int]] = {}
        owners = table.column("conversation_id").to_pylist()
        for cid, pending in zip(owners, table.column("pending").to_pylist(), strict=True):
            total, waiting = out.get(cid, (0, 0))
            out[cid] = (total + 1, waiting + int(bool(pending)))
        return out

    @_survives_cleanup
    def vectors_for(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """Stored embeddings by content key: unchanged text is never embedded twice."""
        import numpy as np

        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            where = f"{sql_in('embed_key', batch)} AND {VECTOR_ROWS}"
            query = self.chunks.search().where(where).select(["embed_key", "vector"])
            for row in query.limit(None).to_arrow().to_pylist():
                found.setdefault(row["embed_key"], np.asarray(row["vector"], dtype=np.float32))
        return found

    def vector_search(
        self, vector: Vectors, limit: int, filters: Filters, threads: int = SCAN_THREADS
    ) -> list[UnitHit]:
        """The `limit` chunks nearest to `vector` (cosine) among those passing the filters, exactly;
        each carries its similarity (evidence for how good a match is). `threads`: the matrix scan's."""
        return [hit for _, hit in self.scored_vector_search(vector, limit, filters, threads)]

    def scored_vector_search(
        self, vector: Vectors, limit: int, filters: Filters, threads: int = SCAN_THREADS
    ) -> list[tuple[float, UnitHit]]:
        import pyarrow as pa

        snapshot = self.matrix.snapshot() if self.matrix.can_mask(filters) else None
        if snapshot is None:
            return self._lance_vector_search(vector, limit, filters)
        changed: list[str] = []
        if snapshot.lance_version != self.chunks_version():
            covered = self.matrix.changed_since(snapshot)
            if covered is None:  # written since, beyond what the change log covers: LanceDB knows
                return self._lance_vector_search(vector, limit, filters)
            changed = covered
        best = snapshot.top(vector, limit, filters, changed, threads)
        taken = snapshot.meta.select(HIT_COLUMNS).take(pa.array([row for _, row in best], pa.int64()))
        hits = _scored_hits(best, taken)
        if changed:  # the rewritten conversations' current rows, from LanceDB
            hits += self._lance_vector_search(vector, limit, filters, sql_in("conversation_id", changed))
            hits.sort(key=lambda pair: pair[0], reverse=True)
        return hits[:limit]

    @_survives_cleanup
    def _lance_vector_search(
        self, vector: Vectors, limit: int, filters: Filters, scope: str | None = None
    ) -> list[tuple[float, UnitHit]]:
        query = self.chunks.search(vector.tolist()).metric("cosine").select(HIT_COLUMNS).limit(limit)
        where = " AND ".join(part for part in (filters.unit_sql(), scope, VECTOR_ROWS) if part)
        query = query.where(where, prefilter=True)
        scored = [(1.0 - float(r["_distance"]), r) for r in query.to_arrow().to_pylist()]
        return [(score, _unit_hit(r, score)) for score, r in scored]

    @_survives_cleanup
    def pending_count(self, conversation_ids: Sequence[str] | None = None) -> int:
        """Passages awaiting their embedding (in these conversations, or in all)."""
        if conversation_ids is None:
            return int(self.chunks.count_rows("pending"))
        return int(self.chunks.count_rows(f"pending AND {sql_in('conversation_id', list(conversation_ids))}"))

    @_survives_cleanup
    def pending_owners(self) -> dict[str, int]:
        """How many passages await their embedding, per conversation (in id order)."""
        table = self.chunks.search().where("pending").select(["conversation_id"]).limit(None).to_arrow()
        counts: dict[str, int] = {}
        for cid in sorted(table.column("conversation_id").to_pylist()):
            counts[cid] = counts.get(cid, 0) + 1
        return counts

    @_survives_cleanup
    def titles(self) -> list[tuple[str, str]]:
        """(conversation id, title) for every stored conversation."""
        table = self.conversations.search().select(["id", "title"]).limit(None).to_arrow()
        return list(zip(table.column("id").to_pylist(), table.column("title").to_pylist(), strict=True))

    @_survives_cleanup
    def conversation_count(self) -> int:
        return int(self.conversations.count_rows())

    @_survives_cleanup
    def chunk_count(self) -> int:
        return int(self.chunks.count_rows())

    @_survives_cleanup
    def counts(self) -> tuple[int, int, int]:
        """Conversations, messages and passages as the tables hold them (`doctor`)."""
        import pyarrow.compute as pc

        sizes = self.conversations.search().select(["message_count"]).limit(None).to_arrow().column(0)
        return int(self.conversations.count_rows()), int(pc.sum(sizes).as_py() or 0), self.chunk_count()

    # ---- writes (callers hold the write lock) ------------------------------------------------

    def write_conversations(self, conversations: Sequence[Conversation], versions: Mapping[str, str]) -> None:
        """Upsert the truth; `versions` are the conversations' fingerprints (computed once by the caller)."""
        table = conversation_rows(conversations, versions)
        self.matrix.note_changes(c.id for c in conversations)  # before the commit: the vector leg then asks LanceDB
        self.conversations.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table)

    @_survives_cleanup
    def chat_stamps(self) -> dict[str, tuple[str, datetime | None, int]]:
        """Every conversation's (version, updated_at, message count): what the shared store's are compared with."""
        columns = ["id", "version", "updated_at", "message_count"]
        table = self.conversations.search().select(columns).limit(None).to_arrow()
        values = [table.column(n).to_pylist() for n in columns]
        return {cid: (version, at, count or 0) for cid, version, at, count in zip(*values, strict=True)}

    @_survives_cleanup
    def conversation_table(self, ids: Sequence[str]) -> pa.Table:
        """These conversations' stored rows as one Arrow table (what goes to the shared store)."""
        if not ids:
            return conversation_schema().empty_table()
        return self.conversations.search().where(sql_in("id", list(ids))).limit(None).to_arrow()

    def replace_derived(
        self,
        conversations: Sequence[Conversation],
        chunks: Sequence[Chunk],
        vectors: Vectors,
        versions: Mapping[str, str],
        pending: Sequence[bool] | None = None,
    ) -> None:
        """Atomically replace the chunks of these conversations.

        `pending[i]` marks chunk i as awaiting its embedding (its row in `vectors` is ignored).
        """
        ids = [c.id for c in conversations]
        scope = sql_in("conversation_id", ids)
        self.matrix.note_changes(ids)  # before the commit: the vector leg takes these from LanceDB meanwhile
        self._replace(self.chunks, "id", self._chunk_table(conversations, chunks, vectors, versions, pending), scope)

    def add_derived(
        self,
        conversation: Conversation,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        version: str,
        pending: Sequence[bool],
        *,
        fresh: bool = False,
    ) -> None:
        """Upsert one slice of a long chat's chunks (`storage.writing.ingest`); `drop_other_versions` ends it. A chat
        with no chunk stored yet (`fresh`) has its slices appended: no join against every stored chunk."""
        self.matrix.note_changes([conversation.id])
        table = self._chunk_table([conversation], chunks, vectors, {conversation.id: version}, pending)
        if fresh:
            self.chunks.add(table)
        else:
            self.chunks.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table)

    def holds_derived(self, conversation_id: str) -> bool:
        return bool(self.chunks.count_rows(sql_in("conversation_id", [conversation_id])))

    def drop_other_versions(self, conversation_id: str, version: str) -> None:
        """Delete a chat's chunks built from any other version of it: after its slices are all written,
        what is left of them is what the chat no longer holds."""
        self.matrix.note_changes([conversation_id])
        self.chunks.delete(f"{sql_in('conversation_id', [conversation_id])} AND version != {sql_string(version)}")

    def _chunk_table(
        self,
        conversations: Sequence[Conversation],
        chunks: Sequence[Chunk],
        vectors: Vectors,
        versions: Mapping[str, str],
        pending: Sequence[bool] | None,
    ) -> pa.Table:
        import numpy as np
        import pyarrow as pa

        by_id = {c.id: c for c in conversations}
        owners = [by_id[ch.conversation_id] for ch in chunks]
        flags = list(pending) if pending is not None else [False] * len(chunks)
        matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(chunks), self.dim)
        matrix[np.asarray(flags, dtype=bool)] = 0.0
        columns = {
            "id": [ch.id for ch in chunks],
            "conversation_id": [ch.conversation_id for ch in chunks],
            "kind": [ch.kind for ch in chunks],
            "first_index": [ch.first_index for ch in chunks],
            "last_index": [ch.last_index for ch in chunks],
            "message_ids": [list(ch.message_ids) for ch in chunks],
            "embed_key": [ch.embed_key for ch in chunks],
            # Built from the NumPy block at once: converting row by row was a visible share of import time.
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel(), pa.float32()), self.dim),
            "pending": flags,
            "source": [c.source for c in owners],
            "project": [c.project for c in owners],
            "updated_at": [naive_utc(c.updated_at) for c in owners],
            "at": [unit_time(by_id[ch.conversation_id], ch.first_index) for ch in chunks],
            "version": [versions[c.id] for c in owners],
        }
        schema = _chunk_schema(self.dim)
        return pa.Table.from_arrays(
            [pa.array(columns[f.name], f.type) if f.name != "vector" else columns[f.name] for f in schema],
            schema=schema,
        )

    @staticmethod
    def _replace(table: Any, key: str, rows: pa.Table, scope: str) -> None:
        """Make `scope`'s rows exactly `rows`, in one commit.

        Deleting the rows `rows` no longer has (`when_not_matched_by_source_delete`) makes LanceDB join
        against every row of the table: at 100k messages ~180 ms and ~350 MB held for a batch of the
        chunks table, growing with the store. Where `scope` holds no row that `rows` lacks (new
        conversations, and the passages an embedding pass rewrites), an upsert joins on the key column
        alone: ~50 ms and ~15 MB at 100k messages. The write lock is held, so nothing
        adds to `scope` between the check and the commit."""
        if rows.num_rows == 0:
            table.delete(scope)
            return
        stored = table.search().where(scope).select([key]).limit(None).to_arrow().column(key).to_pylist()
        merge = table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all()
        if not set(stored) <= set(rows.column(key).to_pylist()):
            merge = merge.when_not_matched_by_source_delete(scope)
        merge.execute(rows)

    def delete(self, ids: Iterable[str]) -> None:
        id_list = list(ids)
        if not id_list:
            return
        self.matrix.note_changes(id_list)
        self.conversations.delete(sql_in("id", id_list))
        self.chunks.delete(sql_in("conversation_id", id_list))

    def optimize(self, *, grace: timedelta = CLEANUP_GRACE) -> None:
        """Compact the tables (callers hold the write lock), then delete what every reader has left behind."""
        for table in self._tables():
            try:
                table.optimize()
            except Exception as exc:  # compaction is housekeeping; a failure must not fail an import
                log.warning("could not compact %s: %s", table.name, exc)
        self.prune(grace=grace)

    def prune(self, *, grace: timedelta = CLEANUP_GRACE) -> None:
        """Delete the versions no reader can still need (callers hold the write lock).

        A version is only ever read by queries that began while it was the newest. With nobody
        mid-read (in any process) that is no one: every version but the newest goes. Otherwise only
        the versions superseded at least `grace` ago go, since only a query running longer than that
        could still need their files; the rest wait for a later write or open. Nothing waits here.
        """
        with self.readers.alone() as alone:
            for table in self._tables():
                try:
                    older_than = self._prunable_age(table, grace) if not alone else self._all_but_newest(table)
                    if older_than is None:
                        continue
                    # Unverified files are safe to delete: no other writer can be mid-commit (the lock).
                    table.optimize(cleanup_older_than=older_than, delete_unverified=True)
                except Exception as exc:  # housekeeping: the next write or open tries again
                    log.warning("could not delete old versions of %s: %s", table.name, exc)

    @staticmethod
    def _all_but_newest(table: Any) -> timedelta | None:
        """With nobody reading: every version but the newest, including those LanceDB's own compaction
        in the cleanup call is about to supersede (it compacts before it cleans up)."""
        if len(table.list_versions()) < 2 and table.stats()["fragment_stats"]["num_fragments"] < 2:
            return None  # one version, nothing to compact: no need to call LanceDB at all
        return timedelta(milliseconds=1)  # 0 would make LanceDB warn

    @staticmethod
    def _prunable_age(table: Any, grace: timedelta) -> timedelta | None:
        """The `cleanup_older_than` that deletes exactly the versions superseded `grace` ago or more."""
        # list_versions gives naive local times (datetime.fromtimestamp): compare with the same clock.
        now = datetime.now()
        versions = sorted(table.list_versions(), key=lambda v: int(v["version"]))
        stamps: list[datetime] = [v["timestamp"] for v in versions]
        superseded_by = [newer for newer in stamps[1:] if newer <= now - grace]
        if not superseded_by:
            return None
        # Every version made before `cut` was superseded in time (grace 0: every version but the newest).
        cut = max(superseded_by) - min(CLEANUP_MARGIN, grace)
        if stamps[0] >= cut:
            return None  # nothing that old: no need to call LanceDB at all
        return max(now - cut, timedelta(milliseconds=1))  # 0 would make LanceDB warn

    def _tables(self) -> tuple[Any, Any]:
        return self.conversations, self.chunks

    def drop_copies(self) -> None:
        """A store from before format 4 kept every message in a table of its own, and every passage's
        text beside its vector, which nothing reads now (the catalog holds the messages; the keyword
        index is rebuilt from the conversations): both dropped (callers hold the write lock)."""
        tables = self._lance()
        if "messages" in set(tables.db.list_tables().tables):
            tables.db.drop_table("messages")
        if "text" in tables.chunks.schema.names:
            tables.chunks.drop_columns(["text"])

    def live_bytes(self) -> int:
        """Bytes of the tables' current versions (what the disk would hold with no history)."""
        return sum(int(t.stats()["total_bytes"]) for t in self._tables())

    def disk_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    # ---- validation and repair of the tables themselves (callers hold the write lock) ----------

    def check(self, name: str, *, full: bool = False) -> str | None:
        """Why the table cannot be read as it is (None: it can). Opening reads its manifest; a scan of
        its ids reads every data file's footer (a lost or cut file fails it); `full` reads every column
        of every row (`doctor`)."""
        try:
            table = self._table(name)
            table.checkout_latest()
            columns = None if full else ["id"]
            query = table.search().limit(None)
            if columns is not None:
                query = query.select(columns)
            for _ in query.to_batches(4096):
                pass
        except Exception as exc:
            reason = damage_of(exc)
            if reason is None:
                raise
            return reason
        return None

    def restore_readable(self, name: str) -> int | None:
        """Make the newest version that reads whole the table's newest again (LanceDB keeps a table's
        versions until they are pruned). Returns that version, or None when none reads whole."""
        tables = self._lance()
        table = getattr(tables, name)
        if table is None:
            return None
        try:
            versions = sorted((int(v["version"]) for v in table.list_versions()), reverse=True)
        except Exception as exc:
            if damage_of(exc) is None:
                raise
            return None
        for version in versions[1:]:
            try:
                table.checkout(version)
                for _ in table.search().limit(None).to_batches(4096):
                    pass
                table.restore()
            except Exception as exc:
                if damage_of(exc) is None:
                    raise
                continue
            finally:
                with contextlib.suppress(Exception):
                    table.checkout_latest()
            self.damaged.pop(name, None)
            return version
        return None

    def recreate(self, name: str, aside: Path) -> Path | None:
        """Move the table's files aside (kept for the user, never deleted here) and start it empty.
        Returns where the old files went (None when there were none)."""
        tables = self._lance()
        folder = self.path / f"{name}.lance"
        moved = None
        if folder.exists():
            aside.mkdir(parents=True, exist_ok=True)
            moved = aside / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.lance"
            os.replace(folder, moved)
        if name == "chunks":
            self.matrix.drop()
        setattr(tables, name, tables.db.create_table(name, schema=self._schema(name), exist_ok=True))
        self.damaged.pop(name, None)
        self.created.add(name)
        return moved

    def chat_versions(self) -> dict[str, tuple[str, int]]:
        """Every conversation's (version, message count)."""
        table = self.conversations.search().select(["id", "version", "message_count"]).limit(None).to_arrow()
        columns = [table.column(n).to_pylist() for n in ("id", "version", "message_count")]
        return {cid: (version, count or 0) for cid, version, count in zip(*columns, strict=True)}

    def passage_versions(self) -> dict[str, set[str]]:
        """The conversation versions each conversation's passages were derived from."""
        table = self.chunks.search().select(["conversation_id", "version"]).limit(None).to_arrow()
        out: dict[str, set[str]] = {}
        for cid, version in zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True):
            out.setdefault(cid, set()).add(version)
        return out
