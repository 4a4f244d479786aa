"""Search latency with exchange windows against without, in the same run, on two copies of one store.

    cp -a /work/perf-stores/s100k OFF && cp -a /work/perf-stores/s100k ON
    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/window_latency.py --off OFF --on ON

`OFF` is opened without windows (`ChunkOptions(window_size=0)`) and searched with `window_weight` 0;
`ON` with windows of 3 (`ChunkOptions(window_size=3)`; the first open re-derives the units) and
`window_weight` 0.7 (`--window-weight`). Each
query (`bench.perf_corpus.queries`) is asked of both, alternately, so load drift on this shared machine
hits both alike. Query vectors are embedded once beforehand and reused, so the times are the engine's
own (the query embedding, the same for both, is reported apart). A third arm on the windows store is
the fusion named by `--third` (`Fusion` fields, default windows by rank alone: `window_similarity_power=0`;
the second session measured `importance=0.3` there). Prints p50/p95 and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.perf_corpus import queries
from bench.variants import fusion_variants
from bench.wrapped import WrappedEmbedder
from storage.chunking import ChunkOptions
from storage.embedder import Embedder, FastEmbedder, Vectors
from storage.library import Library
from storage.search import SHIPPED


class RememberedQueries(WrappedEmbedder):
    """The real model, with each query embedded once (both stores ask the same questions)."""

    def __init__(self, inner: Embedder):
        super().__init__(inner)
        self.memo: dict[str, Vectors] = {}

    def embed_query(self, text: str) -> Vectors:
        if text not in self.memo:
            self.memo[text] = self.inner.embed_query(text)
        return self.memo[text]


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[round(0.95 * (len(ms) - 1))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--off", type=Path, required=True)
    parser.add_argument("--on", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--window-weight", type=float, default=0.7)
    parser.add_argument("--third", default="window_similarity_power=0", help="a third arm: Fusion fields")
    args = parser.parse_args()
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    model = FastEmbedder(cache_dir=Path(cache) if cache else None)
    embedder = RememberedQueries(model)
    off = Library.open(args.off, embedder=embedder, chunk_options=ChunkOptions(window_size=0))
    on = Library.open(args.on, embedder=embedder, chunk_options=ChunkOptions(window_size=3))
    without = replace(SHIPPED, window_weight=0.0)
    windowed = replace(SHIPPED, window_weight=args.window_weight)
    asked = queries(count=args.repeats)
    embedding: list[float] = []
    for query in asked:
        started = time.perf_counter()
        model.embed_query(query)
        embedding.append(time.perf_counter() - started)
        embedder.embed_query(query)
    off.search("warm up", max_results=5, fusion=without)
    on.search("warm up", max_results=5, fusion=windowed)
    third = fusion_variants(windowed, args.third)[0][1]
    times: dict[str, list[float]] = {"off": [], "on": [], "on_third": []}
    for i, query in enumerate(asked):
        order = [("off", off, without), ("on", on, windowed), ("on_third", on, third)]
        for name, library, fusion in order if i % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            library.search(query, max_results=5, fusion=fusion)
            times[name].append(time.perf_counter() - started)
    out = {
        "off": {**summary(times["off"]), "chunks": off.stats().chunks},
        "on": {**summary(times["on"]), "chunks": on.stats().chunks},
        "on_third": {**summary(times["on_third"]), "fusion": args.third},
        "query_embedding": summary(embedding),
        "messages": on.stats().messages,
        "load_average": os.getloadavg()[0],
    }
    out["ratio_p50"] = round(out["on"]["p50_ms"] / out["off"]["p50_ms"], 2)
    out["ratio_p95"] = round(out["on"]["p95_ms"] / out["off"]["p95_ms"], 2)
    out["third_ratio_p50"] = round(out["on_third"]["p50_ms"] / out["on"]["p50_ms"], 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
