"""The memory-mapped vector matrix: exact like LanceDB's flat scan, filtered like it, never stale."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.query.filters import Filters
from storage.stores.lance_store import LanceStore, _chunk_schema
from storage.stores.vector_matrix import MAX_CHANGES, META_COLUMNS, ROUNDING, Snapshot, VectorMatrix
from tests.storage.helpers import BASE, conversation

WORDS = "nginx proxy sourdough starter tomato garden vlan router tax invoice marathon pace cat litter".split()
FILTERS = [
    Filters(),
    Filters(project="homelab"),
    Filters(project="nobody"),
    Filters(source="chatgpt"),
    Filters(after=BASE + timedelta(days=10)),
    Filters(before=BASE + timedelta(days=20, hours=1)),
    Filters(project="work", source="claude", after=BASE + timedelta(days=3), before=BASE + timedelta(days=40)),
]


def corpus(count: int = 60, seed: int = 4) -> list:  # type: ignore[type-arg]
    rng = random.Random(seed)
    return [
        conversation(
            f"c{i}",
            [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(rng.randint(2, 6))],
            project=rng.choice([None, "homelab", "work"]),
            source=rng.choice(["claude", "chatgpt"]),
            day=i,
        )
        for i in range(count)
    ]


@pytest.fixture
def library(tmp_path: Path) -> Library:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(32))
    library.import_conversations(corpus())
    return library


def lance_flat(library: Library, vector: np.ndarray, limit: int, filters: Filters) -> list[tuple[float, str]]:  # type: ignore[type-arg]
    return [(score, hit.chunk_id) for score, hit in library.store._lance_vector_search(vector, limit, filters)]


def matrix_only(library: Library, vector: np.ndarray, limit: int, filters: Filters) -> list[tuple[float, str]]:  # type: ignore[type-arg]
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    assert snapshot.lance_version == library.store.chunks.version
    pairs = library.store.scored_vector_search(vector, limit, filters)
    return [(score, hit.chunk_id) for score, hit in pairs]


def assert_same_top_k(ours: list[tuple[float, str]], lance: list[tuple[float, str]]) -> None:
    """Same scores rank by rank (float16 rounding aside); ids equal wherever scores are not tied."""
    assert len(ours) == len(lance)
    assert np.allclose([s for s, _ in ours], [s for s, _ in lance], atol=2e-3)
    lance_scores = {cid: s for s, cid in lance}
    for score, cid in ours:
        assert cid in lance_scores or any(abs(score - s) < 2e-3 for s, _ in lance[-3:])


def test_an_import_builds_the_matrix_and_its_top_k_equals_lancedbs_exact_scan(library: Library) -> None:
    assert library.store.matrix.snapshot() is not None
    embedder = library.embedder
    assert embedder is not None
    for query in ["nginx proxy", "sourdough tomato garden", "tax invoice cat"]:
        vector = embedder.embed_query(query)
        for filters in FILTERS:
            assert_same_top_k(matrix_only(library, vector, 10, filters), lance_flat(library, vector, 10, filters))


def test_filter_masks_select_exactly_the_rows_lancedbs_filters_select(library: Library) -> None:
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    ids = np.asarray(snapshot.meta.column("id").to_pylist())
    for filters in FILTERS:
        mask = snapshot.mask(filters, [])
        ours = set(ids if mask is None else ids[mask])
        query = library.store.chunks.search().select(["id"]).limit(None)
        if filters.sql():
            query = query.where(filters.sql())
        assert ours == {row["id"] for row in query.to_arrow().to_pylist()}, filters


def test_rows_written_after_the_build_are_found_and_deleted_ones_are_not(library: Library) -> None:
    embedder = library.embedder
    assert embedder is not None
    built = library.store.matrix.snapshot()
    assert built is not None
    late = conversation("late", ["zeppelin hangar blueprint", "zeppelin hangar answer"])
    with library.lock.hold():  # a write that does not rebuild the matrix, as a second process would see it
        library.ingestor().derive([late])
    library.delete(["c1"])
    assert library.store.chunks.version != built.lance_version
    assert library.store.matrix.changed_since(built) == ["c1", "late"]
    found = library.store.vector_search(embedder.embed_query("zeppelin hangar blueprint"), 5, Filters())
    assert found[0].conversation_id == "late"
    everything = library.store.vector_search(embedder.embed_query("nginx proxy"), 500, Filters())
    assert "c1" not in {hit.conversation_id for hit in everything}
    assert len(everything) == library.store.chunks.count_rows()


def test_without_a_covering_change_log_search_falls_back_to_lancedb(library: Library) -> None:
    embedder = library.embedder
    assert embedder is not None
    many = [conversation(f"x{i}", ["zeppelin"]) for i in range(3)]
    with library.lock.hold():
        library.ingestor().derive(many)
    log = library.store.matrix.changes_path
    log.write_text(json.dumps({**json.loads(log.read_text()), "overflow": True}))
    assert library.store.matrix_needs_build()
    found = library.store.vector_search(embedder.embed_query("zeppelin"), 3, Filters())
    assert {hit.conversation_id for hit in found} == {"x0", "x1", "x2"}
    assert MAX_CHANGES >= 1_000  # a long sync of small writes stays covered


def test_a_lost_or_broken_matrix_is_rebuilt_when_the_store_opens(library: Library) -> None:
    embedder = library.embedder
    assert embedder is not None
    vector = embedder.embed_query("marathon pace")
    expected = lance_flat(library, vector, 10, Filters())
    for path in library.store.matrix.directory.iterdir():
        if path.suffix == ".f16":
            path.write_bytes(b"")  # truncated: the mapping fails
    # As a process that starts now sees it (writers never truncate a file a reader may have mapped).
    fresh = LanceStore(library.store.path, library.store.dim)
    assert [hit.chunk_id for hit in fresh.vector_search(vector, 10, Filters())] == [c for _, c in expected]
    library.store.matrix.manifest_path.unlink()
    reopened = Library.open(library.home, embedder=embedder)
    assert reopened.store.matrix.snapshot() is not None
    assert_same_top_k(matrix_only(reopened, vector, 10, Filters()), expected)


def synthetic_matrix(directory: Path, rows: int, dim: int, seed: int) -> VectorMatrix:
    """Clustered unit vectors with exact duplicates (equal scores) and near-duplicates."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, dim))
    vectors = centres[rng.integers(0, 12, rows)] + 0.6 * rng.standard_normal((rows, dim))
    vectors[rows // 2 : rows // 2 + 40] = vectors[7]  # forty ties
    vectors[rows // 3 : rows // 3 + 40] = vectors[9] + 1e-4 * rng.standard_normal((40, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    schema = pa.schema([pa.field(name, _chunk_schema(dim).field(name).type) for name in META_COLUMNS])
    columns = {
        "id": [f"u{i}" for i in range(rows)],
        "conversation_id": [f"c{i // 7}" for i in range(rows)],
        "first_index": [i % 7 for i in range(rows)],
        "last_index": [i % 7 for i in range(rows)],
        "message_ids": [[f"m{i}"] for i in range(rows)],
        "source": ["claude" if i % 3 else "chatgpt" for i in range(rows)],
        "project": [None if i % 4 else "homelab" for i in range(rows)],
        "updated_at": [BASE.replace(tzinfo=None) + timedelta(hours=i) for i in range(rows)],
        "at": [BASE.replace(tzinfo=None) + timedelta(hours=i) for i in range(rows)],
    }
    arrays = [pa.array(columns[f.name], f.type) for f in schema]
    flat = pa.array(vectors.astype(np.float32).ravel(), pa.float32())
    vector = pa.FixedSizeListArray.from_arrays(flat, dim)
    batch = pa.RecordBatch.from_arrays([*arrays, vector], [*schema.names, "vector"])
    matrix = VectorMatrix(directory, dim)
    matrix.build([batch.slice(0, rows // 2), batch.slice(rows // 2)], 1, schema)
    return matrix


def test_int8_rows_with_float16_rescoring_give_exactly_the_float16_scans_top_k(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 6000, 48, seed=2).snapshot()
    assert snapshot is not None
    assert snapshot.codes is not None
    float16_only = dataclasses.replace(snapshot, codes=None)
    rng = np.random.default_rng(5)
    queries = [snapshot.vectors[7].astype(np.float32), snapshot.vectors[9].astype(np.float32)]
    queries += [v / np.linalg.norm(v) for v in rng.standard_normal((20, 48)).astype(np.float32)]
    filters = [Filters(), Filters(project="homelab"), Filters(source="chatgpt", after=BASE + timedelta(days=30))]
    for query in queries:
        for limit in (1, 10, 100, 1000):
            for chosen in filters:
                exclude = ["c3", "c500"] if limit == 100 else []
                ours = snapshot.top(query, limit, chosen, exclude)
                assert ours == float16_only.top(query, limit, chosen, exclude)
                scores = float16_only.scores(query)
                keep = float16_only.mask(chosen, exclude)
                ranked = sorted((-scores[i], i) for i in range(len(scores)) if keep is None or keep[i])[:limit]
                assert ours == [(-s, int(i)) for s, i in ranked]  # best first, equal scores in row order


def every_rows_bounds(snapshot: Snapshot, query: np.ndarray, limit: int, keep: np.ndarray | None) -> np.ndarray:  # type: ignore[type-arg]
    """The rescoring candidates by the plain rule: both bounds for every row, in float64."""
    assert snapshot.codes is not None
    assert snapshot.inverse is not None
    assert snapshot.norm is not None
    assert snapshot.error is not None
    q16 = query.astype(np.float16).astype(np.float64)
    t = 127.0 / float(np.abs(q16).max())
    q8 = np.clip(np.rint(q16 * t), -127, 127).astype(np.int8)
    approx = snapshot.codes.astype(np.float64) @ q8.astype(np.float64) * snapshot.inverse / t
    bound = snapshot.error * float(np.linalg.norm(q16)) + snapshot.norm * float(np.linalg.norm(q8 / t - q16)) + ROUNDING
    lower, upper = approx - bound, approx + bound
    if keep is not None:
        lower[~keep] = upper[~keep] = -np.inf
    k = min(limit, len(lower) if keep is None else int(keep.sum()))
    return np.flatnonzero(upper >= np.sort(lower)[len(lower) - k])


def test_the_int8_first_pass_keeps_exactly_the_rows_the_plain_per_row_bounds_keep(tmp_path: Path) -> None:
    snapshot = synthetic_matrix(tmp_path / "vectors", 6000, 48, seed=3).snapshot()
    assert snapshot is not None
    rng = np.random.default_rng(8)
    queries = [snapshot.vectors[7].astype(np.float32), snapshot.vectors[9].astype(np.float32)]  # ties, near-ties
    queries += [v / np.linalg.norm(v) for v in rng.standard_normal((15, 48)).astype(np.float32)]
    for query in queries:
        for limit in (1, 10, 40, 100, 1000, 6000):
            for chosen in (Filters(), Filters(project="homelab")):
                keep = snapshot.mask(chosen, [])
                expected = every_rows_bounds(snapshot, query, limit, keep)
                assert np.array_equal(snapshot._candidates(query, limit, keep)[0], expected)
                # rescoring the int8 best first leaves out more, but never a row that reaches the k-th
                # best float16 score (ties at the cut included)
                rows, scores = snapshot._rescored(query, limit, keep)
                assert set(rows.tolist()) <= set(expected.tolist())
                every = snapshot.scores(query)
                passing = every if keep is None else every[keep]
                kth = np.sort(passing)[len(passing) - min(limit, len(passing))]
                reaching = np.flatnonzero((every >= kth) & (True if keep is None else keep))
                assert set(reaching.tolist()) <= set(rows.tolist())
                assert np.array_equal(scores, every[rows])
