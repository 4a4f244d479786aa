"""Build a realistic store for speed and memory measurements (`python -m bench.performance.perf build`).

    python -m bench.performance.perf build --messages 100000 --home STORE [--vectors hash|model] [--seed 12]

Everything goes through the product's own import path (`Library.import_conversations`): chunking,
the LanceDB tables, the Tantivy index, compaction, the vector matrix.

`--vectors hash` (the default) writes cheap deterministic vectors instead of running the model: a
bag-of-words random projection (texts that share words get similar vectors), 384 dimensions, like
the default model. **The hash embedder claims the configured model's name** (`--model`, default the
shipped model), so `pastchats --home DIR serve` opens the store without re-embedding it. That is a
deliberate lie for benchmarks only: query vectors from the real model are then compared with vectors
that mean nothing, which costs exactly the same time. The store records how it was built in
`bench-store.json`; never import real chats into such a store (unchanged texts would reuse the fake
vectors). `--vectors model` embeds with the real model (slow: use it for import throughput).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.corpus.synthetic import CorpusWriter
from bench.performance.wrapped import WrappedEmbedder
from server.settings import derived_models_dir
from storage.embedding.embedder import DEFAULT_MODEL, Embedder, FastEmbedder, Vectors
from storage.library import Library
from storage.writing import ingest
from storage.writing.ingest import IngestProgress

HASH_BUCKETS = 8192
BUILD_BATCH_MESSAGES = 8192


class ClaimingHashEmbedder:
    """Deterministic vectors under another model's name (see the module docstring for why)."""

    def __init__(self, claimed_model: str = DEFAULT_MODEL, dim: int = 384, seed: int = 3):
        self._model = claimed_model
        self._dim = dim
        table = np.random.default_rng(seed).standard_normal((HASH_BUCKETS, dim)).astype(np.float32)
        self._table = table

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        return self._dim

    def _row(self, text: str) -> Vectors:
        buckets = [zlib.crc32(word.encode()) % HASH_BUCKETS for word in text.lower().split()]
        row: Vectors = self._table[buckets].sum(axis=0) if buckets else np.ones(self._dim, np.float32)
        return row

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), np.float32)
        matrix = np.stack([self._row(t) for t in texts])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalised: Vectors = (matrix / norms).astype(np.float32)
        return normalised

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


class CountingEmbedder(WrappedEmbedder):
    """An embedder that counts the texts its model is asked to embed (vectors derived from others, such
    as exchange windows', are not: `embed_pending` counts every passage that got a vector)."""

    def __init__(self, inner: Embedder):
        super().__init__(inner)
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self.inner.embed_documents(texts)


def make_embedder(vectors: str, model: str) -> Embedder:
    if vectors == "hash":
        return ClaimingHashEmbedder(model)
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    # Documents through the int8 copy of the model where `pastchats import` uses one (`storage.embedding.int8_model`).
    return FastEmbedder(model, Path(cache) if cache else None, derived_dir=derived_models_dir())


def build(
    home: Path,
    messages: int,
    *,
    vectors: str = "hash",
    model: str = DEFAULT_MODEL,
    seed: int = 12,
    deferred: bool = False,
    store_only: bool = False,
) -> dict[str, object]:
    """Import `messages` synthetic messages into the store at `home`; returns what it measured.

    `deferred` takes `pastchats import`'s path: the chats are stored keyword-searchable first
    (`embed=False`), then their passages are embedded in resumable batches (`embed_pending`).
    `store_only` stops after the first phase: its time and peak RSS at scale, with the real model
    loaded as `pastchats import` loads it, without the days its embedding would take here."""
    embedder = CountingEmbedder(make_embedder(vectors, model))
    library = Library.open(home, embedder=embedder)
    started = time.perf_counter()
    last = [started]

    def progress(p: IngestProgress) -> None:
        now = time.perf_counter()
        if now - last[0] > 10:
            last[0] = now
            rate = p.messages_done / (now - started)
            print(f"  {p.messages_done:,} messages, {rate:,.0f}/s", file=sys.stderr, flush=True)

    batching = ingest.BATCH_CHUNKS, ingest.BATCH_CONVERSATIONS
    if vectors == "hash":  # the model's own batches bound an import's memory; hash vectors need none
        ingest.BATCH_CHUNKS, ingest.BATCH_CONVERSATIONS = BUILD_BATCH_MESSAGES, BUILD_BATCH_MESSAGES
    try:
        stats = library.import_conversations(CorpusWriter(messages, seed), progress=progress, embed=not deferred)
    finally:
        ingest.BATCH_CHUNKS, ingest.BATCH_CONVERSATIONS = batching
    searchable = time.perf_counter() - started
    searchable_peak = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    embedded = stats.chunks_embedded
    if deferred and not store_only:

        def embedding(done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] > 10:
                last[0] = now
                print(f"  {done:,}/{total:,} passages embedded", file=sys.stderr, flush=True)

        embedded = library.embed_pending(progress=embedding)
    seconds = time.perf_counter() - started
    counts = library.stats()
    record: dict[str, object] = {
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "messages": counts.messages,
        "conversations": counts.conversations,
        "passages": counts.chunks,
        "vectors": vectors,
        "model_claimed" if vectors == "hash" else "model": model,
        "seed": seed,
        "import_seconds": round(seconds, 1),
        "messages_per_second": round(counts.messages / seconds, 1),
        "keyword_searchable_seconds": round(searchable, 1),
        "peak_rss_mb_when_keyword_searchable": searchable_peak,
        "deferred_embedding": deferred,
        "texts_embedded": embedded,
        "model_texts": embedder.texts,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "disk_mb": round(counts.disk_bytes / 1e6, 1),
    }
    (home / "bench-store.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    library.close()
    return record
