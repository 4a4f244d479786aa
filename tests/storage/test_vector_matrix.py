"""The memory-mapped vector matrix: exact like LanceDB's flat scan, filtered like it, never stale."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from storage.embedder import HashEmbedder
from storage.filters import Filters
from storage.library import Library
from storage.vector_matrix import MAX_CHANGES
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
        library._ingestor().derive([late])
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
        library._ingestor().derive(many)
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
    assert [hit.chunk_id for hit in library.store.vector_search(vector, 10, Filters())] == [c for _, c in expected]
    library.store.matrix.manifest_path.unlink()
    reopened = Library.open(library.home, embedder=embedder)
    assert reopened.store.matrix.snapshot() is not None
    assert_same_top_k(matrix_only(reopened, vector, 10, Filters()), expected)
