"""Chat-level hit@1/@5 on the realistic test corpus, per query kind, for each leg and both fusions.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/quality/corpus_quality.py \\
        [--keyword-coverage 0.6] [--store DIR] [--windows 0] [--embed-cache bench/.cache/embeddings.sqlite]

The corpus and its queries are the test fixtures (tests/fixtures/corpus): 30 chats; keyword, paraphrase
and identifier queries, each naming the chat that answers it. Modes: `vector` and `keyword` (each leg
alone), `plain` (textbook RRF, k = 60), `hybrid` (the shipped fusion), all ranked the same way (chats in
the order of their best unit); `shown` is what conversation_search shows: hybrid, strong chats first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality.embed_cache import CachingEmbedder
from importers.registry import read
from storage.embedding.embedder import FastEmbedder
from storage.library import Library
from storage.search import PLAIN_RRF, SHIPPED, Fusion
from storage.units.passages import WINDOW_VECTORS, ChunkOptions

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def chat_order(lib: Library, query: str, mode: str, fusion: Fusion) -> list[str]:
    if mode == "shown":
        return [chat.uri for chat in lib.search(query, max_results=10, fusion=fusion).chats]
    units = lib.search_units(query, limit=200, mode=mode, fusion=fusion)  # type: ignore[arg-type]  # checked below
    return list(dict.fromkeys(unit.conversation_id for unit in units))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keyword-coverage", type=float, default=SHIPPED.keyword_coverage)
    parser.add_argument("--store", type=Path, help="a store to reuse (built from the corpus when empty)")
    parser.add_argument("--windows", type=int, default=ChunkOptions().window_size, help="0: no exchange windows")
    parser.add_argument("--window-vectors", choices=WINDOW_VECTORS, default=ChunkOptions().window_vectors)
    parser.add_argument("--window-weight", type=float, default=0.7, help="the window share when --windows > 1")
    parser.add_argument("--embed-cache", type=Path, help="reuse document vectors from this bench cache")
    args = parser.parse_args()
    hybrid = replace(
        SHIPPED,
        keyword_coverage=args.keyword_coverage,
        window_weight=args.window_weight if args.windows > 1 else 0.0,
    )
    home = args.store or Path(tempfile.mkdtemp(prefix="pastchats-corpus-"))
    embedder = CachingEmbedder(FastEmbedder(), args.embed_cache) if args.embed_cache else None
    lib = Library.open(
        home,
        embedder=embedder,
        chunk_options=ChunkOptions(window_size=args.windows, window_vectors=args.window_vectors),
    )
    if lib.is_empty():
        conversations, _ = read(CORPUS / "chats.jsonl")
        lib.import_conversations(conversations)
    queries = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))
    modes = {"vector": PLAIN_RRF, "keyword": PLAIN_RRF, "plain": PLAIN_RRF, "hybrid": hybrid, "shown": hybrid}
    print(f"windows={args.windows} window_vectors={args.window_vectors} hybrid={hybrid}")
    for kind in ("paraphrase", "keyword", "identifier"):
        chosen = [q for q in queries if q["kind"] == kind]
        for mode, fusion in modes.items():
            product_mode = "hybrid" if mode in ("plain", "shown") else mode
            orders = [chat_order(lib, q["query"], mode if mode == "shown" else product_mode, fusion) for q in chosen]
            at1 = sum(order[:1] == [q["expect_chat"]] for q, order in zip(chosen, orders, strict=True))
            at5 = sum(q["expect_chat"] in order[:5] for q, order in zip(chosen, orders, strict=True))
            print(f"{kind:10} {mode:8} hit@1 {at1:2}/{len(chosen)}  hit@5 {at5:2}/{len(chosen)}")


if __name__ == "__main__":
    main()
