"""Search latency of fusion variants against the shipped one, on one store, in the same run.

    cp -a /work/perf-stores/f3-100k STORE     # never search the shared store itself
    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/fusion_arms.py --store STORE \\
        --fusions "common_share=0.2;chat_agreement=0.5"

Every query (`bench.perf_corpus.queries`) is asked under the shipped `Fusion` and under each variant
(`Fusion` fields, `;`-separated, as in `bench/variants.py`), the arms' order turning each query, so
load drift on this shared machine hits them alike. Query vectors are embedded once beforehand, so the
times are the engine's (`Library.search`, 5 chats: what `conversation_search` calls). Prints p50/p95
per arm and each variant's ratio and difference to the shipped arm. `--joined` asks each query as two
halves joined by "and" (for `split_merge`, which searches such a query three times).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.perf_corpus import queries
from bench.variants import QueryMemo, fusion_variants
from bench.window_latency import summary
from storage.embedder import FastEmbedder
from storage.library import Library
from storage.search import SHIPPED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--fusions", required=True, help="';'-separated Fusion field lists (name=value,...)")
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument(
        "--joined", action="store_true", help="join each query's words in two halves with 'and' (split questions)"
    )
    args = parser.parse_args()
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    embedder = QueryMemo(FastEmbedder(cache_dir=Path(cache) if cache else None))
    library = Library.open(args.store, embedder=embedder)
    arms = [("shipped", SHIPPED), *fusion_variants(SHIPPED, args.fusions)]
    asked = queries(count=args.repeats)
    if args.joined:
        asked = [" and ".join((" ".join(w[: len(w) // 2]), " ".join(w[len(w) // 2 :]))) for w in map(str.split, asked)]
    for query in asked:
        embedder.embed_query(query)
    for _, fusion in arms:
        library.search("warm up", max_results=5, fusion=fusion)
    times: dict[str, list[float]] = {name: [] for name, _ in arms}
    load = [os.getloadavg()[0]]
    for i, query in enumerate(asked):
        turn = i % len(arms)
        for name, fusion in arms[turn:] + arms[:turn]:
            started = time.perf_counter()
            library.search(query, max_results=5, fusion=fusion)
            times[name].append(time.perf_counter() - started)
    load.append(os.getloadavg()[0])
    base = summary(times["shipped"])
    out: dict[str, object] = {"messages": library.stats().messages, "load_average": load, "shipped": base}
    for name, _ in arms[1:]:
        arm = summary(times[name])
        out[name] = {
            **arm,
            "ratio_p50": round(arm["p50_ms"] / base["p50_ms"], 2),
            "added_p50_ms": round(arm["p50_ms"] - base["p50_ms"], 2),
            # paired: the same query under both arms, so drift between queries cancels
            "paired_added_median_ms": round(
                1000 * sorted(a - b for a, b in zip(times[name], times["shipped"], strict=True))[len(asked) // 2], 2
            ),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
