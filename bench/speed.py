"""Speed and memory of the product's own code paths, at several store sizes.

    uv run python bench/speed.py --sizes 500,2000,8000 [--real-model] [--out bench/results/speed.json]

For each size it builds a fresh store of synthetic chats (20 messages each, ~40 words a message),
then times, over repeated runs, the median of: hybrid `search`, keyword-only and vector-only `search`,
`recent`, and `read_chat`. Baselines measured in the same run: the keyword leg alone (Tantivy) and a
NumPy brute-force scan over the same vectors, so ratios stay meaningful on a noisy machine.

Document vectors come from a deterministic 384-dimension embedder by default (latency depends on the
vector count and size, not on what the vectors mean); `--real-model` uses fastembed for everything and
also reports import throughput of the real model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.embedding.embedder import Embedder, FastEmbedder, HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message

WORDS = [
    "nginx",
    "proxy",
    "docker",
    "compose",
    "python",
    "error",
    "rust",
    "lifetime",
    "bread",
    "sourdough",
    "garden",
    "tomato",
    "budget",
    "tax",
    "vlan",
    "router",
    "kubernetes",
    "pod",
    "deploy",
    "terraform",
    "bucket",
    "react",
    "state",
    "css",
    "grid",
    "marathon",
    "pace",
    "spanish",
    "verb",
    "cat",
    "food",
    "wedding",
    "speech",
    "lisbon",
    "tram",
    "invoice",
    "postgres",
    "index",
    "replica",
    "backup",
    "restic",
    "cloud",
    "cert",
    "tls",
    "dns",
    "kernel",
    "driver",
    "gpu",
    "laptop",
    "battery",
    "keyboard",
    "monitor",
    "chair",
    "desk",
    "lamp",
    "coffee",
    "tea",
    "recipe",
    "oven",
    "flour",
]
QUERIES = ["nginx reverse proxy", "sourdough starter", "postgres replica lag", "TypeError in python", "tax budget"]


def synthetic(count: int, seed: int = 7) -> list[Conversation]:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    chats = []
    for i in range(count):
        created = start + timedelta(minutes=37 * i)
        messages = [
            Message(
                id=f"m{j}", index=j, role="user" if j % 2 == 0 else "assistant", text=" ".join(rng.choices(WORDS, k=40))
            )
            for j in range(20)
        ]
        chats.append(
            Conversation(
                id=f"chat-{i}",
                source="bench",
                title=f"chat {i}",
                created_at=created,
                updated_at=created + timedelta(minutes=20),
                project=rng.choice(["work", "home", None]),
                messages=messages,
            )
        )
    return chats


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(size: int, embedder: Embedder, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        library = Library.open(Path(tmp), embedder=embedder)
        chats = synthetic(size)
        started = time.perf_counter()
        stats = library.import_conversations(chats)
        import_s = time.perf_counter() - started
        queries = iter(QUERIES * (runs + 1) * 4)
        table = library.store.chunks.search().select(["vector"]).limit(None).to_arrow()
        matrix = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
        query_vector = embedder.embed_query("nginx reverse proxy")
        result = {
            "conversations": size,
            "chunks": float(library.stats().chunks),
            "import_s": import_s,
            "chunks_per_s": stats.chunks_embedded / import_s,
            "search_hybrid_ms": median_ms(lambda: library.search(next(queries), max_results=5), runs),
            "search_keyword_ms": median_ms(lambda: library.search(next(queries), mode="keyword"), runs),
            "search_vector_ms": median_ms(lambda: library.search(next(queries), mode="vector"), runs),
            "search_filtered_ms": median_ms(
                lambda: library.search(next(queries), project="work", after=datetime(2024, 2, 1, tzinfo=UTC)), runs
            ),
            "recent_ms": median_ms(lambda: library.recent(n=5), runs),
            "read_chat_ms": median_ms(lambda: library.read_chat("chat-1", around="m10", limit=10), runs),
            "baseline_numpy_scan_ms": median_ms(lambda: np.argsort(-(matrix @ query_vector))[:100], runs),
            "baseline_tantivy_leg_ms": median_ms(
                lambda: library.keywords.search(
                    __import__("storage.query").query.analyse("nginx proxy"),
                    100,
                    __import__("storage.filters").filters.Filters(),
                ),
                runs,
            ),
            "disk_mb": library.stats().disk_bytes / 1e6,
        }
        result["hybrid_vs_keyword_leg"] = result["search_hybrid_ms"] / result["baseline_tantivy_leg_ms"]
        result["hybrid_vs_numpy_scan"] = result["search_hybrid_ms"] / result["baseline_numpy_scan_ms"]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500,2000,8000", help="conversation counts (20 messages each)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--real-model", action="store_true", help="embed with fastembed (slow: ~40 texts/s)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    embedder: Embedder = (
        FastEmbedder(cache_dir=Path(cache) if cache else None) if args.real_model else HashEmbedder(384)
    )
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(size, embedder, args.runs)
        row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append(row)
        print(json.dumps({k: round(v, 2) for k, v in row.items()}), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"date": datetime.now(UTC).isoformat(), "cpus": os.cpu_count(), "embedder": embedder.model_name}
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
