"""Search latency of the shipped fusion against the plain one, in the same run, on the same stores.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/fusion_latency.py [--rounds 3]

Imports the five LoCoMo conversations (embeddings from the bench cache), then asks every question
with `Library.search` (what the tools call) alternately under the baseline fusion (RRF k=60, no
chat-evidence boost) and the shipped one, so load drift on this noisy machine hits both alike.
Prints medians and the ratio; the issue allows at most +20%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import storage.fusion as fusion
import storage.search as search
from bench.embed_cache import CachingEmbedder
from bench.quality.locomo import load_locomo
from storage.embedder import FastEmbedder
from storage.library import Library

SHIPPED = (fusion.K, search.CHAT_BOOST)
BASELINE = (60, 0.0)


@contextmanager
def fusion_settings(k: int, boost: float) -> Iterator[None]:
    saved = fusion.K, search.CHAT_BOOST
    original = search.rrf
    search.rrf = lambda rankings, weights=None: original(rankings, k=k, weights=weights)
    search.CHAT_BOOST = boost
    try:
        yield
    finally:
        search.rrf = original
        fusion.K, search.CHAT_BOOST = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "bench")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    embedder = CachingEmbedder(FastEmbedder())
    samples = load_locomo(args.data / "locomo" / "locomo_dev.json")
    times: dict[str, list[float]] = {"baseline": [], "shipped": []}
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            library = Library.open(Path(tmp) / sample.sample_id, embedder=embedder)
            library.import_conversations(sample.conversations)
            for _ in range(args.rounds):
                for question in sample.questions:
                    for name, (k, boost) in (("baseline", BASELINE), ("shipped", SHIPPED)):
                        with fusion_settings(k, boost):
                            started = time.perf_counter()
                            library.search(question.question, max_results=5)
                            times[name].append(time.perf_counter() - started)
    base, shipped = (statistics.median(times[n]) * 1000 for n in ("baseline", "shipped"))
    print(f"searches per config: {len(times['shipped'])}")
    print(
        f"median search ms  baseline (k=60, no boost): {base:.2f}  shipped (k={SHIPPED[0]}, boost {SHIPPED[1]}): "
        f"{shipped:.2f}  ratio {shipped / base:.3f}"
    )


if __name__ == "__main__":
    main()
