"""The real model's batching: texts are embedded sorted by length, and each vector still lands in its row."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from storage.embedder import MAX_EMBED_CHARS, FastEmbedder

TEXTS = [
    "Assistant: " + "The reverse proxy forwards requests to the media server on port 8096. " * 12,
    "User: ok",
    "User: how do I feed a sourdough starter that smells of acetone?",
    "Assistant: " + "Raise max_connections in postgresql.conf and restart the pool. " * 4,
]


def test_vectors_come_back_in_the_order_of_the_texts_whatever_their_lengths(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir, batch_size=2)
    together = model.embed_documents(TEXTS)
    alone = np.stack([model.embed_documents([text])[0] for text in TEXTS])
    assert np.allclose(together, alone, atol=1e-4)


def test_a_pasted_blob_without_whitespace_is_cut_before_tokenizing(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir)
    blob = "QUFBQUFB" * 2_000_000  # 16 MB of base64 that passage splitting cannot cut
    vector = model.embed_documents([blob])[0]
    assert np.allclose(vector, model.embed_documents([blob[:MAX_EMBED_CHARS]])[0], atol=1e-5)
