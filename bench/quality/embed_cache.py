"""An `Embedder` that remembers document vectors on disk, keyed by model name and text.

The LongMemEval haystack alone is ~30k turns; embedding it on two cores takes many minutes, and the
haystacks of different questions share most of their sessions. With this wrapper a re-run only embeds
text it has never seen. Queries are not cached: their cost is part of the search latency we measure.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storage.embedding.embedder import Embedder, Vectors

DEFAULT_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "embeddings.sqlite"
# Misses are embedded and committed in batches, so memory stays bounded and an interrupted run keeps
# what it already paid for.
MISS_BATCH = 128
# SQLite's default limit on bound parameters is 999 in older builds.
LOOKUP_BATCH = 500


def cache_key(model_name: str, text: str) -> str:
    digest = hashlib.sha256()
    digest.update(model_name.encode())
    digest.update(b"\x00")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class CachingEmbedder:
    """Wraps any `Embedder`; `hits` and `misses` count document texts served from/added to the cache."""

    def __init__(self, inner: Embedder, path: Path = DEFAULT_CACHE):
        self._inner = inner
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def _lookup(self, keys: Sequence[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), LOOKUP_BATCH):
            batch = unique[start : start + LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch)
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [cache_key(self.model_name, text) for text in texts]
        found = self._lookup(keys)
        missing = list({key: text for key, text in zip(keys, texts, strict=True) if key not in found}.items())
        # The model pads each batch to its longest text: batches of like lengths cost far less.
        missing.sort(key=lambda item: len(item[1]))
        for start in range(0, len(missing), MISS_BATCH):
            batch = missing[start : start + MISS_BATCH]
            vectors = self._inner.embed_documents([text for _, text in batch])
            rows = [(key, vectors[i].astype(np.float32).tobytes()) for i, (key, _) in enumerate(batch)]
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
            self._db.commit()
            for i, (key, _) in enumerate(batch):
                found[key] = vectors[i]
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        return np.stack([found[key] for key in keys]).astype(np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._inner.embed_query(text)

    def close(self) -> None:
        self._db.close()
