"""The float16 rows a search rescores are read with `pread`: the same values as the map, never resident."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from storage.query.filters import Filters
from storage.stores.vector_matrix import READ_GAP, FloatRows
from tests.storage.test_vector_matrix import synthetic_matrix


def resident_kb(suffix: str) -> int | None:
    """This process's resident kB in mappings of files named `*suffix`; None if it maps none."""
    total: int | None = None
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and not parts[0].endswith(":"):
            inside = len(parts) > 5 and parts[5].endswith(suffix)
        elif inside and parts[0] == "Rss:":
            total = (total or 0) + int(parts[1])
    return total


def test_rows_read_by_pread_equal_the_mapped_rows_in_any_order_spacing_and_repetition(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 3000, 48, seed=1).snapshot()
    assert snapshot is not None
    reader = FloatRows(tmp_path / "vectors" / f"{snapshot.generation}.f16", 48)
    mapped = np.asarray(snapshot.vectors)
    gap = READ_GAP
    chosen = [
        [],
        [0],
        [2999],
        list(range(100, 140)),  # one run
        [5, 5 + gap, 5 + 2 * gap + 1, 5 + 3 * gap + 2],  # at the gap: one read; past it: separate reads
        [2999, 0, 1500, 7, 7, 1499],  # unsorted, repeated
        np.random.default_rng(3).choice(3000, 700, replace=False).tolist(),
    ]
    for rows in chosen:
        indices = np.asarray(rows, dtype=np.int64)
        assert np.array_equal(reader.read(indices), mapped[indices])
    reader.close()


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads this process's mappings from /proc")
def test_searches_leave_no_float16_page_resident_and_find_what_the_map_finds(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 6000, 48, seed=2).snapshot()
    assert snapshot is not None
    assert snapshot.float_rows is not None
    through_map = dataclasses.replace(snapshot, float_rows=None)
    rng = np.random.default_rng(9)
    queries = [v / np.linalg.norm(v) for v in rng.standard_normal((12, 48)).astype(np.float32)]
    name = f"{snapshot.generation}.f16"
    found = [snapshot.top(q, limit, Filters(), []) for q in queries for limit in (10, 600)]
    assert resident_kb(name) == 0  # mapped (for a scan without int8 rows), never touched
    assert found == [through_map.top(q, limit, Filters(), []) for q in queries for limit in (10, 600)]
    assert (resident_kb(name) or 0) > 0  # reading through the map would have kept its pages


def test_a_search_under_way_reads_on_after_a_writer_replaces_the_generation(tmp_path: Path) -> None:
    matrix = synthetic_matrix(tmp_path / "vectors", 2000, 48, seed=4)
    old = matrix.snapshot()
    assert old is not None
    query = np.asarray(old.vectors[11], dtype=np.float32)
    before = old.top(query, 50, Filters(), [])
    synthetic_matrix(tmp_path / "vectors", 2000, 48, seed=5)  # a new generation; the old files are deleted
    assert not (tmp_path / "vectors" / f"{old.generation}.f16").exists()
    assert old.top(query, 50, Filters(), []) == before


def test_the_finer_bound_holds_for_every_row_and_is_tighter_than_the_int8_querys(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 4000, 48, seed=6).snapshot()
    assert snapshot is not None
    assert snapshot.codes is not None
    assert snapshot.error is not None
    assert snapshot.norm is not None
    assert snapshot.inverse is not None
    rows = np.arange(4000)
    for query in np.random.default_rng(2).standard_normal((10, 48)).astype(np.float32):
        query /= np.linalg.norm(query)
        q16, t, d = snapshot._query(query)
        coarse = snapshot.codes.astype(np.float64) @ d.astype(np.float64) * snapshot.inverse / t
        coarse += snapshot.error * np.linalg.norm(q16) + snapshot.norm * np.linalg.norm(d / t - q16)
        finer = snapshot._finer_upper(query, rows)
        assert np.all(finer >= snapshot.scores(query))
        assert np.median(finer - snapshot.scores(query)) < 0.75 * np.median(coarse - snapshot.scores(query))
