"""Retrieval variants on LoCoMo, each a change of one knob, on stores kept between runs.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/variants.py \\
        --context 30 --k 10 --chat-boost 0.6 --chat-units 1 [--vector-weight 1.0] [--modes hybrid]

Embedding knobs (`--context`, `--no-speaker`, `--title`) change what is embedded, so each combination
gets its own stores under `bench/.cache/variants/` (built once; vectors come from the embedding cache).
Ranking knobs (`--k`, `--vector-weight`, `--chat-boost`, `--chat-units`, `--neighbour`) only change the
search: they make the `Fusion` passed to `search_units`. Scores with the harness's own loaders and metrics;
`python -m bench.quality` remains the record of the shipped configuration.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.embed_cache import CachingEmbedder
from bench.quality.locomo import load_locomo
from bench.quality.metrics import expand_units
from bench.quality.run_locomo import score_question
from storage.chunking import ChunkOptions
from storage.embedder import FastEmbedder
from storage.library import Library
from storage.search import SHIPPED, Fusion

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("recall@5", "recall@10", "recall@25", "recall@50", "session_recall@5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--context", type=int, default=ChunkOptions().previous_words)
    parser.add_argument("--no-speaker", action="store_true")
    parser.add_argument("--title", action="store_true")
    parser.add_argument("--k", type=int, default=SHIPPED.k)
    parser.add_argument("--vector-weight", type=float, default=SHIPPED.vector_weight)
    parser.add_argument("--chat-boost", type=float, default=SHIPPED.chat_boost)
    parser.add_argument("--chat-units", type=int, default=SHIPPED.chat_units)
    parser.add_argument("--neighbour", type=float, default=SHIPPED.neighbour_share)
    parser.add_argument("--modes", default="hybrid")
    args = parser.parse_args()

    options = ChunkOptions(title=args.title, previous_words=args.context, speaker=not args.no_speaker)
    fusion = Fusion(
        k=args.k,
        vector_weight=args.vector_weight,
        chat_boost=args.chat_boost,
        chat_units=args.chat_units,
        neighbour_share=args.neighbour,
    )

    embedder = CachingEmbedder(FastEmbedder())
    tag = (
        f"ctx{options.previous_words}-{'spk' if options.speaker else 'nospk'}-{'title' if options.title else 'notitle'}"
    )
    libraries = []
    for sample in load_locomo(args.data / "locomo" / "locomo_dev.json"):
        home = ROOT / "bench" / ".cache" / "variants" / tag / sample.sample_id
        library = Library.open(home, embedder=embedder, chunk_options=options)
        if library.is_empty():
            library.import_conversations(sample.conversations)
        libraries.append((sample, library))
    for mode in args.modes.split(","):
        rows = []
        for sample, library in libraries:
            for question in sample.questions:
                units = library.search_units(question.question, limit=100, mode=mode, fusion=fusion)
                turns = list(dict.fromkeys(expand_units(u.message_ids for u in units)))
                rows.append(score_question(turns, question.evidence))
        scores = {m: round(100 * sum(r[m] for r in rows) / len(rows), 1) for m in METRICS}
        print(
            f"{tag} k={args.k} vw={args.vector_weight} chat={args.chat_boost}x{args.chat_units} "
            f"neighbour={args.neighbour} {mode}: {scores}"
        )


if __name__ == "__main__":
    main()
