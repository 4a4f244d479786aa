"""Search latency of the shipped fusion against plain RRF, in the same run, on the same stores.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/fusion_latency.py [--rounds 3]

Imports the five LoCoMo conversations (embeddings from the bench cache), then asks every question
with `Library.search` (what the tools call) alternately under `PLAIN_RRF` (k = 60, equal weights, no
chat evidence) and the shipped `Fusion`, so load drift on this noisy machine hits both alike. Prints
medians and the ratio; the retrieval-quality issue allows at most +20%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.embed_cache import CachingEmbedder
from bench.quality.locomo import load_locomo
from storage.embedder import FastEmbedder
from storage.library import Library
from storage.search import PLAIN_RRF, SHIPPED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "bench")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    embedder = CachingEmbedder(FastEmbedder())
    samples = load_locomo(args.data / "locomo" / "locomo_dev.json")
    times: dict[str, list[float]] = {"plain": [], "shipped": []}
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            library = Library.open(Path(tmp) / sample.sample_id, embedder=embedder)
            library.import_conversations(sample.conversations)
            for _ in range(args.rounds):
                for question in sample.questions:
                    for name, fusion in (("plain", PLAIN_RRF), ("shipped", SHIPPED)):
                        started = time.perf_counter()
                        library.search(question.question, max_results=5, fusion=fusion)
                        times[name].append(time.perf_counter() - started)
    plain, shipped = (statistics.median(times[n]) * 1000 for n in ("plain", "shipped"))
    print(f"searches per fusion: {len(times['shipped'])}")
    print(f"median search ms  plain RRF: {plain:.2f}  shipped: {shipped:.2f}  ratio {shipped / plain:.3f}")


if __name__ == "__main__":
    main()
