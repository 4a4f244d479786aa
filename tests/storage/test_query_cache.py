"""Remembered query vectors are the model's own, exactly, and cannot be changed from outside."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from storage.embedding.embedder import QUERY_CACHE, FastEmbedder


def test_a_repeated_query_gets_exactly_the_vector_the_model_gives(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir)
    first = model.embed_query("nginx reverse proxy websocket timeout")
    first[:] = 0.0  # a caller scribbling on its copy must not reach the cache
    again = model.embed_query("nginx reverse proxy websocket timeout")
    model.clear_query_cache()
    fresh = model.embed_query("nginx reverse proxy websocket timeout")
    assert np.array_equal(again, fresh)
    assert np.any(fresh)


def test_the_cache_keeps_only_the_latest_queries(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir)
    for i in range(QUERY_CACHE + 10):
        model.embed_query(f"query number {i}")
    assert len(model._queries) == QUERY_CACHE
    assert "query number 0" not in model._queries
    assert f"query number {QUERY_CACHE + 9}" in model._queries
