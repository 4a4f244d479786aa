"""The chunks' vectors as a memory-mapped float16 matrix beside LanceDB: exact search in milliseconds.

LanceDB's exact (flat) scan costs ~80 ms at 170k passages where a plain matrix product over the same
vectors takes a few; its ANN index reaches only ~0.9 recall@10 on this kind of
vector. So the vectors are also kept here, derived from the `chunks` table, and searched exactly:

- `<generation>.f16`: one float16 row per embedded chunk (half the bytes of float32; scores differ by
  ~1e-4). Read through the page cache, which the several server processes that clients start share.
- `<generation>.i8` and `<generation>.i8.npy`: the same rows as int8 (each row scaled to its largest
  component), with each row's scale and error bound. A search scans these (half the bytes again), then
  rescores with the float16 rows every row the int8 scores' error bounds cannot rule out of the top k:
  the result is exactly the float16 scan's (`Snapshot.top`). Those rows are read with `pread`
  (`FloatRows`), not through the map: a search reads ~1,300 rows spread over the whole file, and each
  page touched through a map brings its cached neighbours into the resident set (the kernel's
  fault-around), so after a few searches every server process held the whole file (137 MB at 100k).
- `<generation>.arrow`: the rows' ids and filter columns (Arrow IPC, memory-mapped too); filters
  (project, source, time range) become boolean masks over it.
- `manifest.json`: the current generation and the LanceDB `chunks` version it was built from.
- `changes.json`: conversations whose chunks were written since that build. Writers add to it *before*
  they commit; a reader that sees a newer LanceDB version searches the matrix without those
  conversations and asks LanceDB for their rows, so fresh rows are always found. Past `MAX_CHANGES`,
  or without a matrix, search falls back to LanceDB alone until the next rebuild.

Everything here is derived state: deleting the folder only costs a rebuild (done by the next writer,
or when the store is opened).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import uuid
import weakref
from collections.abc import Collection, Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # NumPy and pyarrow are imported where they are used: reads of the catalog need neither
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

from storage.embedding.embedder import Vectors
from storage.query.filters import Filters
from storage.times import naive_utc
from storage.upkeep import idle_release

# simsimd's threaded scans run on its own OpenMP runtime (a bundled libgomp), whose worker threads by
# default spin for a while after each scan: ~5 ms of a core per search (tests/storage/test_scan_idle.py),
# taken from the float16 reads and the keyword leg that come next; on the 100k store at load 9-11 the
# vector leg took 0.46-0.90x the time and 0.66-0.86x the CPU without it. The runtime reads this once,
# when it is loaded: before the import. A value the user set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:  # SIMD float16 dot products (AVX2/F16C, NEON); NumPy has no fast float16 matrix product
    import simsimd

    HAVE_SIMSIMD = True
except ImportError:  # pragma: no cover - a platform without a simsimd wheel: the NumPy path below
    HAVE_SIMSIMD = False

log = logging.getLogger(__name__)

# 2: rows carry their message time (`at`), which time filters select on;
# 3: with chat rows and int8 rows; 4: int8 rows, the chats read from the catalog (`storage.stores.catalog`)
FORMAT = 4
MAX_CHANGES = 2_000
META_COLUMNS = [
    "id",
    "conversation_id",
    "first_index",
    "last_index",
    "message_ids",
    "source",
    "project",
    "updated_at",
    "at",
]
MASKABLE = {"project", "source", "after", "before", "chats"}  # the Filters fields a mask reproduces exactly
_BLOCK = 16_384
# Slack for float rounding in the int8 bound: simsimd sums float16 products in float32 (~1e-5 here).
ROUNDING = 1e-4
# Slack for the float32 first pass of `Snapshot._candidates` (its rounding is ~1e-7 here).
_SLACK = 1e-5
# Rows at most this far apart are read in one `pread` (12 KB): fewer calls, cheaper than the bytes between.
READ_GAP = 16
# Threads for a scan of every row (simsimd's own; each row's score is the same either way). On this
# 2-core machine the int8 scan of 164k rows took 0.73x the one-thread time even at load 8. A hybrid
# search scans with one (`top`'s `threads`): the keyword leg runs beside it on the other core.
SCAN_THREADS = max(1, min(2, os.cpu_count() or 1))


def _best(scores: npt.NDArray[np.float64], rows: npt.NDArray[np.int64], limit: int) -> list[tuple[float, int]]:
    """The `limit` best (score, row) pairs, best first, equal scores in row order."""
    import numpy as np

    if len(rows) > limit:
        cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        chosen = scores >= cut  # ties at the cut all stay, and are decided by row below
        scores, rows = scores[chosen], rows[chosen]
    order = np.lexsort((rows, -scores))[:limit]
    return [(float(scores[i]), int(rows[i])) for i in order]


def _column(table: npt.NDArray[np.float64] | None, i: int) -> npt.NDArray[np.float64] | None:
    import numpy as np

    return None if table is None else np.ascontiguousarray(table[:, i])


def quantize(block: npt.NDArray[np.float16]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
    """int8 rows c scaled to each row's largest component, and per row (1/s, ||c/s||, ||c/s - x||)."""
    import numpy as np

    values = block.astype(np.float64)
    largest = np.abs(values).max(axis=1)
    largest[largest == 0] = 1.0
    scale = 127.0 / largest
    codes = np.clip(np.rint(values * scale[:, None]), -127, 127).astype(np.int8)
    restored = codes / scale[:, None]
    norms = np.linalg.norm(restored, axis=1)
    errors = np.linalg.norm(restored - values, axis=1)
    return codes, np.stack([1.0 / scale, norms, errors], axis=1)


class FloatRows:
    """The float16 rows of a `.f16` file read by `pread`, so that they never join the resident set.

    The file stays open for the snapshot's life: a writer that publishes a new generation deletes the
    old files, and a search still under way on the old snapshot reads on from the open descriptor.
    """

    def __init__(self, path: Path, dim: int):
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._closer = weakref.finalize(self, os.close, self._fd)
        self.dim = dim

    def read(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float16]:
        """The rows, in the order given (ascending order reads fastest)."""
        import numpy as np

        if len(rows) == 0:
            return np.zeros((0, self.dim), dtype=np.float16)
        order = None
        if np.any(rows[1:] < rows[:-1]):
            order = np.argsort(rows, kind="stable")
            rows = rows[order]
        # Runs of rows at most READ_GAP apart are one read each; the rows are then picked out of them.
        breaks = np.flatnonzero(np.diff(rows) > READ_GAP) + 1
        starts = rows[np.concatenate([[0], breaks])]
        ends = rows[np.concatenate([breaks - 1, [len(rows) - 1]])] + 1
        size, lengths = 2 * self.dim, ends - starts
        spans = zip(starts.tolist(), lengths.tolist(), strict=True)
        data = b"".join([os.pread(self._fd, n * size, s * size) for s, n in spans])
        if len(data) != int(lengths.sum()) * size:
            raise OSError(f"short read from the float16 rows ({len(data)} bytes)")
        span = np.searchsorted(starts, rows, side="right") - 1
        read = np.frombuffer(data, dtype=np.float16).reshape(-1, self.dim)
        picked: npt.NDArray[np.float16] = read[(np.cumsum(lengths) - lengths)[span] + rows - starts[span]]
        if order is not None:
            unsorted = np.empty_like(picked)
            unsorted[order] = picked
            picked = unsorted
        return picked

    def close(self) -> None:
        self._closer()


def _codes(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
    import numpy as np

    encoded = column.combine_chunks().dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, {value: i for i, value in enumerate(encoded.dictionary.to_pylist())}


def _micros(value: datetime | None) -> int | None:
    import pyarrow as pa

    naive = naive_utc(value)
    return None if naive is None else int(pa.scalar(naive, pa.timestamp("us")).value)


@dataclass(frozen=True)
class Snapshot:
    """One generation of the matrix, mapped into memory, with its filter columns decoded."""

    generation: str
    lance_version: int
    vectors: npt.NDArray[np.float16]
    meta: pa.Table
    conversation: npt.NDArray[np.int32]
    conversation_codes: dict[str, int]
    project: npt.NDArray[np.int32]
    project_codes: dict[str, int]
    source: npt.NDArray[np.int32]
    source_codes: dict[str, int]
    at: npt.NDArray[np.int64]
    # int8 rows c, and per row: 1/s (x ≈ c / s), ||c/s|| and ||c/s - x|| (L2 norms, for the error bound).
    codes: npt.NDArray[np.int8] | None = None
    inverse: npt.NDArray[np.float64] | None = None
    norm: npt.NDArray[np.float64] | None = None
    error: npt.NDArray[np.float64] | None = None
    # The float16 rows by `pread` (None where the platform has no `pread`: then through the map).
    float_rows: FloatRows | None = None

    @functools.cached_property
    def _coarse(self) -> tuple[npt.NDArray[np.float32], float, float]:
        """1/s as float32 (the first pass over every row), and the largest ||c/s - x|| and ||c/s||."""
        import numpy as np

        assert self.inverse is not None
        assert self.norm is not None
        assert self.error is not None
        if len(self.inverse) == 0:
            return np.zeros(0, dtype=np.float32), 0.0, 0.0
        return self.inverse.astype(np.float32), float(self.error.max()), float(self.norm.max())

    def mask(self, filters: Filters, exclude: Collection[str]) -> npt.NDArray[np.bool_] | None:
        """Rows that pass the filters and belong to none of `exclude`; None when every row does."""
        import numpy as np

        keep: npt.NDArray[np.bool_] | None = None

        def narrow(condition: npt.NDArray[np.bool_]) -> None:
            nonlocal keep
            keep = condition if keep is None else keep & condition

        if filters.projects is not None:
            wanted = [self.project_codes.get(p, -2) for p in filters.projects]
            narrow(np.isin(self.project, np.asarray(wanted, dtype=np.int32)))
        if filters.source is not None:
            narrow(self.source == self.source_codes.get(filters.source, -2))
        after, before = _micros(filters.after), _micros(filters.before)
        if after is not None:
            narrow(self.at > after)
        if before is not None:
            narrow(self.at < before)
        if filters.chats is not None:
            wanted = [self.conversation_codes[c] for c in filters.chats if c in self.conversation_codes]
            narrow(np.isin(self.conversation, np.asarray(wanted, dtype=np.int32)))
        codes = [self.conversation_codes[c] for c in exclude if c in self.conversation_codes]
        if codes:
            narrow(~np.isin(self.conversation, np.asarray(codes, dtype=np.int32)))
        return keep

    def scores(
        self, query: Vectors, rows: npt.NDArray[np.int64] | None = None, threads: int = SCAN_THREADS
    ) -> npt.NDArray[np.float64]:
        """float16 dot products with every row, or with `rows` only (the same values either way)."""
        import numpy as np

        q16 = query.astype(np.float16)[None, :]
        if rows is not None:
            if len(rows) == 0:
                return np.zeros(0, dtype=np.float64)
            if self.float_rows is not None:
                picked = self.float_rows.read(rows)
            else:
                picked = np.ascontiguousarray(self.vectors[rows])
            if HAVE_SIMSIMD:
                return np.asarray(simsimd.cdist(q16, picked, metric="dot"), dtype=np.float64).ravel()
            return np.asarray(picked.astype(np.float32) @ query, dtype=np.float64)  # pragma: no cover
        if HAVE_SIMSIMD:
            every = simsimd.cdist(q16, self.vectors, metric="dot", threads=threads)
            return np.asarray(every, dtype=np.float64).ravel()
        out = np.empty(len(self.vectors), dtype=np.float64)  # pragma: no cover - no simsimd wheel
        for start in range(0, len(self.vectors), _BLOCK):  # pragma: no cover
            out[start : start + _BLOCK] = self.vectors[start : start + _BLOCK].astype(np.float32) @ query
        return out  # pragma: no cover

    def top(
        self, query: Vectors, limit: int, filters: Filters, exclude: Collection[str], threads: int = SCAN_THREADS
    ) -> list[tuple[float, int]]:
        """(cosine similarity, row) of the best `limit` rows passing the filters, best first; equal
        scores in row order. The float16 scan's result exactly, whether or not int8 rows serve it."""
        import numpy as np

        if len(self.vectors) == 0:
            return []
        keep = self.mask(filters, exclude)
        if self.codes is not None and HAVE_SIMSIMD:
            rows, scores = self._rescored(query, limit, keep, threads)
        else:
            rows = np.arange(len(self.vectors))
            scores = self.scores(query, threads=threads)
            if keep is not None:
                rows, scores = rows[keep], scores[keep]
        best = _best(scores, rows, limit)
        idle_release.searched()  # the scan's freed arrays go back to the system once searching stops
        return best

    def _rescored(
        self, query: Vectors, limit: int, keep: npt.NDArray[np.bool_] | None, threads: int = SCAN_THREADS
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The float16 scores of every row that could be among the best `limit`, and of few others.

        The `limit` candidates with the best int8 scores are rescored first: the lowest of their float16
        scores cannot be above the `limit`-th best of all rows, so a row whose upper bound is below it
        cannot be among the best either. That floor sits far above the `limit`-th best lower bound.

        The rows above the floor are then bounded again without most of the query's int8 rounding
        (`_finer_upper`), and only those still above it are read: on the 100k store 1,303 float16 rows
        a search (p50; 1,977 max) instead of 2,861 (6,591).
        """
        import numpy as np

        rows, approx, upper = self._candidates(query, limit, keep, threads)
        if len(rows) <= limit:
            return rows, self.scores(query, rows)
        first = np.sort(rows[np.argpartition(-approx, limit - 1)[:limit]])
        first_scores = self.scores(query, first)
        floor = first_scores.min()
        chosen = upper >= floor
        chosen[np.searchsorted(rows, first)] = False  # `rows` ascend, and `first` is among them
        maybe = rows[chosen]
        rest = maybe[self._finer_upper(query, maybe) >= floor]
        return np.concatenate([first, rest]), np.concatenate([first_scores, self.scores(query, rest)])

    def _query(self, query: Vectors) -> tuple[npt.NDArray[np.float64], float, npt.NDArray[np.int8]]:
        """The query as float16 (in float64), and its int8 codes d with their scale t (q ≈ d/t)."""
        import numpy as np

        q16 = query.astype(np.float16).astype(np.float64)
        largest = float(np.abs(q16).max()) or 1.0
        t = 127.0 / largest
        return q16, t, np.clip(np.rint(q16 * t), -127, 127).astype(np.int8)

    def _finer_upper(self, query: Vectors, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """An upper bound of each row's float16 score, from its int8 row and a finer int8 query.

        The query is split into two int8 vectors, q ≈ (d + e/254)/t. Then c/s · q = (c·d + c·e/254) /
        (t s) + c/s · (q - (d + e/254)/t), and the int8 products are exact integers, so the float16
        score is within ||c/s - x|| ||q|| + ||c/s|| ||q - (d + e/254)/t|| (+ float rounding) of that
        estimate: the query's part of `_candidates`'s bound, 254 times smaller. The second product is
        taken for these rows alone.
        """
        import numpy as np

        assert self.codes is not None
        assert self.inverse is not None
        assert self.norm is not None
        assert self.error is not None
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float64)
        q16, t, d = self._query(query)
        e = np.clip(np.rint((q16 * t - d) * 254.0), -127, 127).astype(np.int8)
        residual = float(np.linalg.norm(q16 - (d + e / 254.0) / t))
        picked = np.take(self.codes, rows, axis=0)
        both = np.asarray(simsimd.cdist(np.stack([d, e]), picked, metric="dot", out_dtype="float32"), np.float64)
        estimate = (both[0] + both[1] / 254.0) * self.inverse[rows] / t
        bound = self.error[rows] * float(np.linalg.norm(q16)) + self.norm[rows] * residual + ROUNDING
        upper: npt.NDArray[np.float64] = estimate + bound
        return upper

    def _candidates(
        self, query: Vectors, limit: int, keep: npt.NDArray[np.bool_] | None, threads: int = SCAN_THREADS
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Every row whose float16 score could reach the top `limit`, by the int8 scores' error bounds;
        with each its int8 score and upper bound.

        With c the int8 row and s its scale, d and t the query's: c/s · d/t - x·q = (c/s - x)·q + c/s ·
        (d/t - q), so by Cauchy-Schwarz the int8 score is within ||c/s - x|| ||q|| + ||c/s|| ||d/t - q|| of
        the float16 one (+ float rounding). A row whose upper bound is below the `limit`-th best lower
        bound cannot be among the best; the others are rescored.

        Computing both bounds for every row cost as much as the int8 scan itself, so a first pass in
        float32 with the largest bound of any row keeps only the rows near the `limit`-th best score
        (`near`); the exact bounds above are then computed for those alone. The rows `near` leaves out
        have an upper bound below that of the `limit`-th best lower bound, so the result is the same.
        """
        import numpy as np

        assert self.codes is not None
        assert self.inverse is not None
        assert self.norm is not None
        assert self.error is not None
        q16, t, q8 = self._query(query)
        query_error = float(np.linalg.norm(q8 / t - q16))
        query_norm = float(np.linalg.norm(q16))
        inverse32, max_error, max_norm = self._coarse
        raw = self._int8_scan(q8, threads)
        approx = raw * inverse32  # the int8 scores times t, to float32 rounding (~1e-7 relative)
        if keep is not None:
            approx[~keep] = -np.inf
        count = int(np.count_nonzero(keep)) if keep is not None else len(approx)
        if count == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        k = min(limit, count)
        # Over the rows passing the filters only: a partition over many equal -inf values was most of a
        # filtered search's time at 1M rows.
        passing = approx if keep is None else approx[keep]
        kth = float(np.partition(passing, count - k)[count - k]) / t
        widest = max_error * query_norm + max_norm * query_error + ROUNDING
        # Every row within two widest bounds (and float32 rounding) of the k-th best int8 score.
        near = np.flatnonzero(approx >= (kth - 2 * widest - _SLACK) * t)
        exact = raw[near].astype(np.float64) * self.inverse[near] / t
        bound = self.error[near] * query_norm + self.norm[near] * query_error + ROUNDING
        lower, upper = exact - bound, exact + bound
        threshold = np.partition(lower, len(lower) - k)[len(lower) - k]
        chosen = upper >= threshold
        return near[chosen], exact[chosen], upper[chosen]

    def _int8_scan(self, q8: npt.NDArray[np.int8], threads: int) -> npt.NDArray[np.float32]:
        """The int8 dot products of the query's codes with every row: most of a search's time here."""
        import numpy as np

        assert self.codes is not None
        # int8 dot products are integers below 2^24 in magnitude: exact in float32
        scanned = simsimd.cdist(q8[None, :], self.codes, metric="dot", out_dtype="float32", threads=threads)
        raw: npt.NDArray[np.float32] = np.asarray(scanned).ravel()
        return raw

    def rows(self, indices: list[int], columns: list[str] | None = None) -> list[dict[str, Any]]:
        """The rows' metadata (only `columns`, if given: converting the filter columns is most of the cost)."""
        import pyarrow as pa

        meta = self.meta if columns is None else self.meta.select(columns)
        rows: list[dict[str, Any]] = meta.take(pa.array(indices, pa.int64())).to_pylist()
        return rows


class VectorMatrix:
    """The matrix files in `directory`: loading (cached per generation), building, the change log."""

    def __init__(self, directory: Path, dim: int):
        self.directory = directory
        self.dim = dim
        self._snapshot: Snapshot | None = None
        self._manifest_stamp: tuple[int, int, int] | None = None
        self._changes_stamp: tuple[int, int, int] | None = None
        self._changes: dict[str, Any] = {}

    @property
    def manifest_path(self) -> Path:
        return self.directory / "manifest.json"

    @property
    def changes_path(self) -> Path:
        return self.directory / "changes.json"

    @staticmethod
    def can_mask(filters: Filters) -> bool:
        return all(f.name in MASKABLE or getattr(filters, f.name) is None for f in fields(filters))

    def _manifest(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("dim") != self.dim:
            return None
        return data

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int, int] | None:
        # The inode too: every write replaces the file, so two writes within one clock tick differ.
        try:
            stat = path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def snapshot(self) -> Snapshot | None:
        """The current generation, mapped once and reused until a writer publishes a new one."""
        import pyarrow as pa

        stamp = self._stamp(self.manifest_path)
        if stamp is None:
            self._snapshot = None
        elif stamp != self._manifest_stamp:
            manifest = self._manifest()
            try:
                self._snapshot = self._load(manifest) if manifest else None
            except (OSError, ValueError, pa.ArrowException) as exc:
                log.warning("vector matrix unreadable (%s); searching LanceDB until it is rebuilt", exc)
                self._snapshot = None
        self._manifest_stamp = stamp
        return self._snapshot

    def _load(self, manifest: dict[str, Any]) -> Snapshot:
        import numpy as np
        import pyarrow as pa

        generation, rows = str(manifest["generation"]), int(manifest["rows"])
        # One contiguous copy (~100 bytes a row): `take` over the build's many batches cost ~25 ms a search.
        meta = pa.ipc.open_file(pa.memory_map(str(self.directory / f"{generation}.arrow"))).read_all()
        meta = meta.combine_chunks()
        if meta.num_rows != rows:
            raise ValueError(f"matrix metadata has {meta.num_rows} rows, expected {rows}")
        codes: npt.NDArray[np.int8] | None = None
        scales: npt.NDArray[np.float64] | None = None
        float_rows: FloatRows | None = None
        if rows:
            vectors: npt.NDArray[np.float16] = np.memmap(
                self.directory / f"{generation}.f16", dtype=np.float16, mode="r", shape=(rows, self.dim)
            )
            if manifest.get("int8"):
                codes = np.memmap(self.directory / f"{generation}.i8", dtype=np.int8, mode="r", shape=(rows, self.dim))
                scales = np.load(self.directory / f"{generation}.i8.npy")
                if scales.shape != (rows, 3):
                    raise ValueError(f"int8 scales have shape {scales.shape}, expected ({rows}, 3)")
            if hasattr(os, "pread"):
                float_rows = FloatRows(self.directory / f"{generation}.f16", self.dim)
        else:
            vectors = np.zeros((0, self.dim), dtype=np.float16)
        conversation, conversation_codes = _codes(meta.column("conversation_id"))
        project, project_codes = _codes(meta.column("project"))
        source, source_codes = _codes(meta.column("source"))
        at = meta.column("at").cast(pa.int64()).to_numpy().astype(np.int64)
        return Snapshot(
            generation, int(manifest["lance_version"]), vectors, meta, conversation, conversation_codes,
            project, project_codes, source, source_codes, at, codes,
            inverse=_column(scales, 0), norm=_column(scales, 1), error=_column(scales, 2), float_rows=float_rows,
        )  # fmt: skip

    def changed_since(self, snapshot: Snapshot) -> list[str] | None:
        """Conversations written since `snapshot` was built; None if the log does not cover it."""
        stamp = self._stamp(self.changes_path)
        if stamp != self._changes_stamp:
            try:
                self._changes = json.loads(self.changes_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._changes = {}
            self._changes_stamp = stamp
        if self._changes.get("base") != snapshot.generation or self._changes.get("overflow"):
            return None
        return list(self._changes.get("conversations", []))

    # ---- writes (callers hold the store's write lock) ------------------------------------------

    def note_changes(self, conversation_ids: Iterable[str]) -> None:
        """Record conversations about to be rewritten; call *before* the LanceDB commit."""
        manifest = self._manifest()
        if manifest is None:
            return
        try:
            current = json.loads(self.changes_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            current = {}
        if current.get("base") != manifest["generation"]:
            current = {"base": manifest["generation"], "conversations": []}
        if not current.get("overflow"):
            ids = sorted(set(current["conversations"]) | set(conversation_ids))
            current = {"base": manifest["generation"], "conversations": ids}
            if len(ids) > MAX_CHANGES:
                current = {"base": manifest["generation"], "conversations": [], "overflow": True}
        self._write_json(self.changes_path, current)

    def needs_build(self, lance_version: int) -> bool:
        """No usable matrix, or one whose change log no longer covers what was written since."""
        manifest = self._manifest()
        if manifest is None or not self._complete(manifest):
            return True
        if int(manifest["lance_version"]) == lance_version:
            return False
        try:
            changes = json.loads(self.changes_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return True
        return bool(changes.get("base") != manifest["generation"] or changes.get("overflow"))

    def _complete(self, manifest: dict[str, Any]) -> bool:
        """Whether every file of the manifest's generation is there, the row files at their full size (a
        cut or lost file is rebuilt rather than mapped short)."""
        generation, rows = str(manifest["generation"]), int(manifest.get("rows", -1))
        sizes = {".f16": 2 * rows * self.dim, ".i8": rows * self.dim, ".arrow": None, ".i8.npy": None}
        for suffix, size in sizes.items():
            try:
                found = (self.directory / f"{generation}{suffix}").stat().st_size
            except OSError:
                return False
            if size is not None and found != size:
                return False
        return True

    def damage(self) -> str | None:
        """Why the matrix cannot serve (None when it can, or when there is none yet: a new store)."""
        if not self.manifest_path.exists():
            return None
        manifest = self._manifest()
        if manifest is None:
            return "its manifest is unreadable or of another size of vectors"
        if not self._complete(manifest):
            return "a file of it is missing or cut short"
        return None

    def build(
        self,
        batches: Iterable[pa.RecordBatch],
        lance_version: int,
        meta_schema: pa.Schema,
    ) -> int:
        """Write a new generation from `batches` (META_COLUMNS + `vector`), publish it, drop the old one."""
        import numpy as np
        import pyarrow as pa

        self.directory.mkdir(parents=True, exist_ok=True)
        generation = uuid.uuid4().hex[:12]
        rows = 0
        writer = pa.ipc.new_file(str(self.directory / f"{generation}.arrow"), meta_schema)
        scales = []
        with (
            (self.directory / f"{generation}.f16").open("wb") as vectors,
            (self.directory / f"{generation}.i8").open("wb") as quantized,
        ):
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                flat = batch.column("vector").flatten().to_numpy(zero_copy_only=False)
                block = flat.astype(np.float16).reshape(batch.num_rows, self.dim)
                vectors.write(block.tobytes())
                codes, scale = quantize(block)
                quantized.write(codes.tobytes())
                scales.append(scale)
                writer.write_batch(batch.select(META_COLUMNS).cast(meta_schema))
                rows += batch.num_rows
        writer.close()
        np.save(self.directory / f"{generation}.i8.npy", np.concatenate(scales) if scales else np.zeros((0, 3)))
        self._write_json(self.changes_path, {"base": generation, "conversations": []})
        manifest = {"format": FORMAT, "generation": generation, "lance_version": lance_version, "rows": rows}
        manifest["int8"] = True
        self._write_json(self.manifest_path, {**manifest, "dim": self.dim})
        self._remove_other_generations(generation)
        return rows

    def drop(self) -> None:
        """Forget the matrix (the vectors were reset): search uses LanceDB until the next build."""
        self.manifest_path.unlink(missing_ok=True)
        self._remove_other_generations(None)

    def _remove_other_generations(self, keep: str | None) -> None:
        for path in self.directory.glob("*"):
            if path.suffix in (".f16", ".i8", ".arrow", ".npy") and path.name.split(".")[0] != keep:
                with contextlib.suppress(OSError):  # a reader that mapped it keeps its pages; Windows may refuse
                    path.unlink()

    @staticmethod
    def _write_json(path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
