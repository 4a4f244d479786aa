"""What the tools show, kept beside the vector matrix: chats' metadata and messages, memory-mapped.

A search shows a handful of chats; reading their metadata, message windows and time spans from
LanceDB took three queries of 7-25 ms each (docs/BENCHMARKS.md). The same rows are written here with
the matrix's generation, by the same writer at the same moment, and read through memory maps (the
pages are shared by every server process and only the ones shown are touched):

- `<generation>.messages.arrow`: every message, in LanceDB's order, in batches of `BATCH` rows. Its
  pages leave the process's resident set after each read (`ChatRows.release`): each page touched maps
  its cached neighbours too (the kernel's fault-around), so 40 searches left 64-69 MB of the 81 MB file
  resident in every server process, where a read needs a few pages for a few milliseconds;
- `<generation>.order.npy`: (row, position) of every message, ordered by conversation and position;
- `<generation>.chats.arrow`: one row per conversation, in id order: its metadata, the time span of
  its messages, and where its messages start in the order file.

Rows of conversations written since the build are never taken from here: the matrix's change log
lists them and the store reads those from LanceDB (`LanceStore`). Everything here is derived state.
"""

from __future__ import annotations

import mmap
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from storage.filters import Filters
from storage.hits import ConversationMeta
from storage.models import Message
from storage.times import naive_utc, utc

MESSAGE_COLUMNS = ["conversation_id", "id", "position", "role", "text", "created_at"]
CHAT_COLUMNS = ["id", "source", "title", "created_at", "updated_at", "project", "url", "message_count", "version"]
MESSAGE_FIELDS = ["id", "position", "role", "text", "created_at"]
SUFFIXES = (".chats.arrow", ".messages.arrow", ".order.npy")  # the files of one generation
BATCH = 4096  # rows per message batch: row r is in batch r // BATCH
# Chats kept decoded once read (`ChatRows.chats`): a search asks for the same few three times (metadata,
# message windows, time spans), and a client's next searches often show some of them again.
KEPT_CHATS = 1024
_NONE = np.iinfo(np.int64).max


def _micros(value: datetime | None) -> int | None:
    naive = naive_utc(value)
    return None if naive is None else int(pa.scalar(naive, pa.timestamp("us")).value)


def _rebatched(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
    """The same rows in batches of exactly BATCH rows (the last one shorter)."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        while count >= BATCH:
            table = pa.Table.from_batches(held).combine_chunks()
            yield table.slice(0, BATCH).to_batches()[0]
            rest = table.slice(BATCH)
            held, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


def build(
    directory: Path, generation: str, chats: pa.Table, messages: Iterable[pa.RecordBatch], schema: pa.Schema
) -> None:
    """Write the files of `generation`: `chats` holds CHAT_COLUMNS, `messages` MESSAGE_COLUMNS (`schema`).

    Messages are streamed (the text is never all in memory); only three integers a message are kept.
    """
    code_of: dict[str, int] = {}
    codes, positions, times = [], [], []
    with pa.ipc.new_file(str(directory / f"{generation}.messages.arrow"), schema) as writer:
        for batch in _rebatched(b.select(MESSAGE_COLUMNS) for b in messages if b.num_rows):
            owners = batch.column("conversation_id").to_pylist()
            codes.append(np.fromiter((code_of.setdefault(c, len(code_of)) for c in owners), np.int64, len(owners)))
            positions.append(batch.column("position").to_numpy(zero_copy_only=False).astype(np.int64))
            created = batch.column("created_at")
            micros = created.cast(pa.int64()).fill_null(_NONE).to_numpy(zero_copy_only=False)
            times.append(micros.astype(np.int64))
            writer.write_batch(batch.cast(schema))
    code = np.concatenate(codes) if codes else np.zeros(0, np.int64)
    position = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    at = np.concatenate(times) if times else np.zeros(0, np.int64)
    order = np.lexsort((position, code))
    np.save(directory / f"{generation}.order.npy", np.stack([order, position[order]], axis=1).astype(np.int64))
    sorted_code, sorted_at = code[order], at[order]
    starts = np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]]) if len(order) else np.zeros(0, int)
    counts = np.diff(np.r_[starts, len(order)])
    valid = sorted_at != _NONE
    first = np.minimum.reduceat(np.where(valid, sorted_at, _NONE), starts) if len(starts) else starts
    last = np.maximum.reduceat(np.where(valid, sorted_at, -1), starts) if len(starts) else starts
    dated = np.add.reduceat(valid.astype(np.int64), starts) > 0 if len(starts) else starts.astype(bool)
    group_of = {c: i for i, c in enumerate(sorted_code[starts].tolist())}
    chats = chats.select(CHAT_COLUMNS).sort_by("id")
    groups = [group_of.get(code_of.get(cid, -1), -1) for cid in chats.column("id").to_pylist()]
    found = np.asarray([g >= 0 for g in groups], dtype=bool)
    index = np.asarray([max(g, 0) for g in groups], dtype=np.int64)

    def column(values: npt.NDArray[np.int64], present: npt.NDArray[np.bool_], kind: pa.DataType) -> pa.Array:
        picked = values[index] if len(values) else np.zeros(len(index), np.int64)
        return pa.array(picked, pa.int64(), mask=~present).cast(kind)

    span = found & (dated[index] if len(dated) else found)
    stamp = pa.timestamp("us")
    chats = chats.append_column("first_message_at", column(first, span, stamp))
    chats = chats.append_column("last_message_at", column(last, span, stamp))
    chats = chats.append_column("message_start", column(starts.astype(np.int64), found, pa.int64()).fill_null(0))
    chats = chats.append_column("message_rows", column(counts.astype(np.int64), found, pa.int64()).fill_null(0))
    with pa.ipc.new_file(str(directory / f"{generation}.chats.arrow"), chats.schema) as writer:
        writer.write_table(chats)


def message_of_row(row: dict[str, Any]) -> Message:
    """A messages row (LanceDB's or the chat rows') as a `Message`."""
    return Message(
        id=row["id"], index=row["position"], role=row["role"], text=row["text"], created_at=utc(row["created_at"])
    )


@dataclass(frozen=True)
class ChatRow:
    """One conversation as the rows hold it: its metadata, its messages' time span and where they are."""

    meta: ConversationMeta
    span: tuple[datetime, datetime] | None
    message_start: int
    message_rows: int


class ChatRows:
    """One generation's chats and messages, mapped into memory."""

    def __init__(self, directory: Path, generation: str):
        chats = pa.ipc.open_file(pa.memory_map(str(directory / f"{generation}.chats.arrow"))).read_all()
        self._chats = chats.combine_chunks()
        with (directory / f"{generation}.messages.arrow").open("rb") as file:
            # Python's map rather than Arrow's: only this one can drop its pages (`release`).
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        reader = pa.ipc.open_file(pa.py_buffer(self._map))
        # Batches are views of the mapped file: holding them costs no memory, only what is read is paged in.
        self._batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        mapped = np.load(directory / f"{generation}.order.npy", mmap_mode="r")
        self._order: npt.NDArray[np.int64] = np.asarray(mapped)  # a plain view: memmap slicing is slow
        self._index = {cid: i for i, cid in enumerate(self._chats.column("id").to_pylist())}
        updated = self._chats.column("updated_at")
        self._updated = updated.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        self._updated_valid = updated.is_valid().to_numpy(zero_copy_only=False)
        # Rows of one generation never change: a decoded row stays right for this object's life.
        self._kept: dict[str, ChatRow] = {}

    def __contains__(self, conversation_id: object) -> bool:
        return conversation_id in self._index

    def chats(self, ids: Iterable[str]) -> dict[str, ChatRow]:
        """The rows of these chats (unknown ids left out), in the rows' (id) order."""
        index, kept = self._index, self._kept
        wanted = sorted({cid for cid in ids if cid in index}, key=index.__getitem__)
        found: dict[str, ChatRow] = {}
        for cid in wanted:
            if (row := kept.get(cid)) is not None:  # `get`: another thread may empty `kept` meanwhile
                found[cid] = row
        missing = [index[cid] for cid in wanted if cid not in found]
        if missing:
            if len(kept) + len(missing) > KEPT_CHATS:
                kept.clear()
            for read in self._chats.take(pa.array(missing, pa.int64())).to_pylist():
                first, last = read["first_message_at"], read["last_message_at"]
                found[read["id"]] = kept[read["id"]] = ChatRow(
                    meta=ConversationMeta.from_row(read),
                    span=(utc(first), utc(last)) if first is not None else None,
                    message_start=read["message_start"],
                    message_rows=read["message_rows"],
                )
        return {cid: found[cid] for cid in wanted}

    def _rows(self, rows: Iterable[int], columns: list[str]) -> list[dict[str, Any]]:
        by_batch: dict[int, list[int]] = {}
        for row in rows:
            by_batch.setdefault(row // BATCH, []).append(row % BATCH)
        found: dict[int, dict[str, Any]] = {}
        try:
            for number, offsets in by_batch.items():
                picked = self._batches[number].select(columns).take(pa.array(offsets, pa.int64())).to_pylist()
                found.update(zip((number * BATCH + o for o in offsets), picked, strict=True))
        finally:
            self.release()
        return [found[row] for row in rows]

    def release(self) -> None:
        """Drop the message file's pages from this process (they stay in the page cache, shared by every
        process; the next read maps them again). A read in another thread at the same moment only
        faults its pages back in: the map is read-only and backed by the file."""
        if hasattr(mmap, "MADV_DONTNEED"):  # not on Windows, where the pages stay mapped
            self._map.madvise(mmap.MADV_DONTNEED)

    def windows(self, wanted: Iterable[tuple[ChatRow, list[tuple[int, int]]]]) -> dict[str, list[Message]]:
        """Each chat's messages with positions in any of its (first, last) ranges, in order, read at once;
        chats without such messages are left out."""
        rows: dict[str, list[int]] = {}
        for chat, spans in wanted:
            order = self._order[chat.message_start : chat.message_start + chat.message_rows]
            picked: set[int] = set()
            for first, last in spans:
                lo = int(np.searchsorted(order[:, 1], first, side="left"))
                hi = int(np.searchsorted(order[:, 1], last, side="right"))
                picked.update(range(lo, hi))
            if picked:
                rows[chat.meta.id] = order[sorted(picked), 0].tolist()
        found = iter(self._rows([row for chat_rows in rows.values() for row in chat_rows], MESSAGE_FIELDS))
        out: dict[str, list[Message]] = {}
        for cid, chat_rows in rows.items():
            out[cid] = [message_of_row(next(found)) for _ in chat_rows]
        return out

    def position(self, chat: ChatRow, message_id: str) -> int | None:
        """The position of the message with this id in the chat, or None."""
        order = self._order[chat.message_start : chat.message_start + chat.message_rows]
        for position, found in zip(order[:, 1].tolist(), self._rows(order[:, 0].tolist(), ["id"]), strict=True):
            if found["id"] == message_id:
                return int(position)
        return None

    def timeline(self, filters: Filters, exclude: Collection[str]) -> list[tuple[datetime, str]]:
        """(updated_at, id) of every chat here passing the filters, except those in `exclude`."""
        keep = self._mask(filters)
        gone = [self._index[cid] for cid in exclude if cid in self._index]
        if gone:
            keep[np.asarray(gone, dtype=np.int64)] = False
        picked = self._chats.select(["updated_at", "id"]).take(pa.array(np.flatnonzero(keep), pa.int64()))
        return list(zip(picked.column("updated_at").to_pylist(), picked.column("id").to_pylist(), strict=True))

    def page(self, filters: Filters, n: int, newest_first: bool) -> tuple[list[tuple[datetime, str]], bool]:
        """`storage.recent.page_by_time` over this rows's timeline, without converting all of it:
        the rows are in id order, so a stable sort by time orders them as (updated_at, id) tuples."""
        rows = np.flatnonzero(self._mask(filters) & self._updated_valid)
        ordered = rows[np.argsort(self._updated[rows], kind="stable")]
        if newest_first:
            ordered = ordered[::-1]
        end = len(ordered)
        if len(ordered) > n:
            times = self._updated[ordered]
            end = n
            while end < len(ordered) and times[end] == times[n - 1]:
                end += 1
        picked = self._chats.select(["updated_at", "id"]).take(pa.array(ordered[:end], pa.int64()))
        page = list(zip(picked.column("updated_at").to_pylist(), picked.column("id").to_pylist(), strict=True))
        return page, end < len(ordered)

    def _mask(self, filters: Filters) -> npt.NDArray[np.bool_]:
        keep = np.ones(self._chats.num_rows, dtype=bool)
        if filters.projects is not None:
            wanted = pa.array(list(filters.projects), pa.string())
            keep &= pc.is_in(self._chats.column("project"), value_set=wanted).fill_null(False).to_numpy()
        if filters.source is not None:
            keep &= pc.equal(self._chats.column("source"), filters.source).fill_null(False).to_numpy()
        after, before = _micros(filters.after), _micros(filters.before)
        if after is not None:
            keep &= self._updated_valid & (self._updated > after)
        if before is not None:
            keep &= self._updated_valid & (self._updated < before)
        return keep

    def counts(self, column: str, exclude: Collection[str]) -> dict[str, int]:
        """How many chat heres (not in `exclude`) have each value of `column`."""
        ids = self._chats.column("id").to_pylist()
        out: dict[str, int] = {}
        for cid, value in zip(ids, self._chats.column(column).to_pylist(), strict=True):
            if value is not None and cid not in exclude:
                out[value] = out.get(value, 0) + 1
        return out
