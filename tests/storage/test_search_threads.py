"""A hybrid search's scan runs on one core beside the keyword leg: the same rows, scores and hits."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import numpy as np

from storage.library import Library
from storage.query.filters import Filters
from storage.stores.lance_store import HIT_COLUMNS, _unit_hit
from tests.storage.helpers import BASE
from tests.storage.test_vector_matrix import library, synthetic_matrix  # noqa: F401 - the fixture


def test_a_scan_on_one_thread_ranks_exactly_as_a_scan_on_two(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 6000, 48, seed=6).snapshot()
    assert snapshot is not None
    assert snapshot.codes is not None
    float16_only = dataclasses.replace(snapshot, codes=None)  # the full float16 scan threads too
    rng = np.random.default_rng(11)
    queries = [snapshot.vectors[3].astype(np.float32)]
    queries += [v / np.linalg.norm(v) for v in rng.standard_normal((12, 48)).astype(np.float32)]
    filters = [Filters(), Filters(project="homelab"), Filters(source="chatgpt", after=BASE + timedelta(days=30))]
    for query in queries:
        for limit in (1, 100, 600):
            for chosen in filters:
                for matrix in (snapshot, float16_only):
                    assert matrix.top(query, limit, chosen, [], 1) == matrix.top(query, limit, chosen, [], 2)


def test_the_vector_legs_hits_built_column_by_column_equal_those_built_row_by_row(
    library: Library,  # noqa: F811 - the fixture imported above
) -> None:
    assert library.embedder is not None
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    for text in ("nginx proxy", "tax invoice marathon", "cat"):
        vector = library.embedder.embed_query(text)
        for chosen in (Filters(), Filters(project="homelab")):
            best = snapshot.top(vector, 50, chosen, [])
            rows = snapshot.rows([row for _, row in best], HIT_COLUMNS)
            expected = [(score, _unit_hit(row, score)) for (score, _), row in zip(best, rows, strict=True)]
            assert library.store.scored_vector_search(vector, 50, chosen, threads=1) == expected
            assert library.store.vector_search(vector, 50, chosen) == [hit for _, hit in expected]
            assert all(hit.similarity is not None for _, hit in expected)
