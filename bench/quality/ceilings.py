"""How far any ordering could take the retrieval goals: the ceilings beside what ships (a research tool,
docs/BENCHMARKS.md).

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python -m bench.quality.ceilings \\
        --stores STORES_DIR [--bench locomo|lme]

For each question, three numbers per metric:
- shipped: the metric over `search_units`' ranking (100 units);
- pool: the best any ordering of what the legs retrieve could reach: every unit the fusion holds
  (both legs' candidates and the messages their windows bring in), evidence first;
- top N: the best any reordering of the shipped ranking's first N turns (sessions for session recall)
  could reach: what a reranker over that list could do;
- store: the best any ordering of the whole store could reach: only the evidence's own size limits it
  (a question with 12 evidence turns can have at most 10 of them in the first 10; an evidence id that is
  no turn of the conversation can never be found).
Stores are kept under `--stores` (one folder per chunking), so a second run only ranks.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality.embed_cache import CachingEmbedder
from bench.quality.locomo import CATEGORIES, load_locomo, session_of
from bench.quality.longmemeval import load_longmemeval
from bench.quality.metrics import dcg, expand_units
from bench.quality.run_longmemeval import score_question as score_lme
from storage.embedding.embedder import FastEmbedder
from storage.library import Library
from storage.models import Conversation
from storage.units.passages import ChunkOptions

ROOT = Path(__file__).resolve().parents[2]
KS = (5, 10)
TOP_N = (20, 50)  # reordering the shipped ranking's first N turns


def ranked(library: Library, question: str) -> list[tuple[str, str]]:
    """The shipped ranking's (chat, message) turns, best first, each once."""
    units = library.search_units(question, limit=100)
    return expand_units([[(u.conversation_id, m) for m in u.message_ids] for u in units])


def pool_turns(library: Library, question: str) -> set[tuple[str, str]]:
    """Every (chat, message) the fusion holds a unit for: what any reordering could put first."""
    ranking = library.engine.rank(question, limit=100)
    return {(u.conversation_id, m) for cid, _ in ranking.fused for u in (ranking.units[cid],) for m in u.message_ids}


def best_recall(found: int, wanted: int, k: int) -> float:
    """Recall at k when the `found` evidence items are placed first (no evidence counts 1)."""
    return 1.0 if wanted == 0 else min(k, found) / wanted


def best_ndcg(found: int, wanted: int, k: int) -> float:
    return 0.0 if wanted == 0 else dcg([1.0] * min(k, found)) / dcg([1.0] * min(k, wanted))


def locomo(args: argparse.Namespace, store: Callable[[str, list[Conversation]], Library]) -> None:
    rows: list[tuple[int, dict[str, float]]] = []
    for sample in load_locomo(args.data / "locomo" / "locomo_dev.json"):
        library = store(sample.sample_id, sample.conversations)
        turns_in_store = {str(m.id) for c in sample.conversations for m in c.messages}
        for q in sample.questions:
            evidence = set(q.evidence)
            sessions = {session_of(e) for e in evidence}
            turns = [m for _, m in ranked(library, q.question)]
            pool = {m for _, m in pool_turns(library, q.question)}
            row: dict[str, float] = {}
            for k in KS:
                row[f"shipped R@{k}"] = best_recall(len(evidence & set(turns[:k])), len(evidence), k)
                for n in TOP_N:
                    row[f"top{n} R@{k}"] = best_recall(len(evidence & set(turns[:n])), len(evidence), k)
                row[f"pool R@{k}"] = best_recall(len(evidence & pool), len(evidence), k)
                row[f"store R@{k}"] = best_recall(len(evidence & turns_in_store), len(evidence), k)
            ranked_sessions = list(dict.fromkeys(session_of(t) for t in turns))
            row["shipped sess R@5"] = len(sessions & set(ranked_sessions[:5])) / len(sessions) if sessions else 1.0
            for n in (10, 20):
                top = set(ranked_sessions[:n])
                row[f"top{n} sess R@5"] = best_recall(len(sessions & top), len(sessions), 5)
            pool_sessions = {session_of(t) for t in pool}
            row["pool sess R@5"] = best_recall(len(sessions & pool_sessions), len(sessions), 5)
            store_sessions = {session_of(t) for t in turns_in_store}
            row["store sess R@5"] = best_recall(len(sessions & store_sessions), len(sessions), 5)
            row["evidence turns"] = len(evidence)
            row["pool turns"] = len(pool)
            row["store turns"] = len(turns_in_store)
            row["evidence sessions"] = len(sessions)
            rows.append((q.category, row))
    print_table("LoCoMo, all 1,020 questions", [r for _, r in rows])
    for category in sorted(CATEGORIES):
        print_table(f"LoCoMo {CATEGORIES[category]}", [r for c, r in rows if c == category])


def lme(args: argparse.Namespace, store: Callable[[str, list[Conversation]], Library]) -> None:
    rows = []
    for q in load_longmemeval(args.data / "longmemeval" / "longmemeval_s_dev.json", None, args.lme_per_type):
        if q.abstention or not q.strict:
            continue
        haystack = q.haystack(args.lme_variant)
        library = store(q.question_id, haystack.conversations)
        turns = ranked(library, q.question)
        sessions = list(dict.fromkeys(haystack.session_of[cid] for cid, _ in turns))
        gold = set(q.gold_sessions)
        scores = score_lme(sessions, q.gold_sessions)
        pool = {haystack.session_of[c] for c, _ in pool_turns(library, q.question)}
        row = {
            "shipped all@5": scores["recall_all@5"],
            "pool all@5": float(len(gold & pool) == len(gold) and len(gold) <= 5),
            "store all@5": float(len(gold) <= 5),
            "shipped ndcg@5": scores["ndcg_any@5"],
            "pool ndcg@5": best_ndcg(len(gold & pool), len(gold), 5),
            "store ndcg@5": 1.0,
            "evidence sessions": len(gold),
        }
        rows.append(row)
        if scores["recall_all@5"] < 1:
            places = {g: sessions.index(g) + 1 if g in sessions else None for g in sorted(gold)}
            print(f"misses recall_all@5: {q.question_id} ({q.question_type}) {q.question!r}; gold places {places}")
            print(f"  first sessions: {sessions[:8]}")
    print_table(f"LongMemEval_S {args.lme_variant}, strict", rows)


def print_table(title: str, rows: Sequence[dict[str, float]]) -> None:
    if not rows:
        return
    sums: dict[str, float] = defaultdict(float)
    for row in rows:
        for key, value in row.items():
            sums[key] += value
    scale = 1 if title.startswith("LongMemEval") else 100
    counts = ("evidence", "pool turns", "store turns")
    cells = ", ".join(
        f"{key} {sums[key] / len(rows):.2f}" if key.startswith(counts) else f"{key} {scale * sums[key] / len(rows):.3g}"
        for key in rows[0]
    )
    print(f"{title} (n={len(rows)}): {cells}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--stores", type=Path, default=ROOT / "bench" / ".cache" / "ceilings")
    parser.add_argument("--bench", choices=["locomo", "lme"], default="locomo")
    parser.add_argument("--lme-variant", choices=["user", "full"], default="full")
    parser.add_argument("--lme-per-type", type=int)
    args = parser.parse_args()
    options = ChunkOptions()
    tag = f"ctx{options.previous_words}-spk-notitle-win{options.window_size}s{options.window_stride}"
    tag += f"-wv{options.window_vectors}" if options.window_vectors != "model" else ""
    embedder = CachingEmbedder(FastEmbedder())

    def store(name: str, chats: list[Conversation]) -> Library:
        folder = args.stores / tag / (f"lme-{args.lme_variant}" if args.bench == "lme" else "")
        library = Library.open(folder / name, embedder=embedder, chunk_options=options)
        if library.is_empty():
            library.import_conversations(chats)
        return library

    (lme if args.bench == "lme" else locomo)(args, store)
    print(f"embedded {embedder.misses} new texts, {embedder.hits} from the cache", file=sys.stderr)


if __name__ == "__main__":
    main()
