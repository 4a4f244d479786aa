"""Retrieval variants on LoCoMo and LongMemEval_S (user turns), on stores kept between runs.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/variants.py \\
        [--bench locomo|lme] [--context 30] [--windows 3 --stride 2] [--chat-doc] \\
        [--k 10 --chat-boost 0.6 --window-weight 0.5 --chat-doc-weight 0.3] \\
        [--fusions "window_weight=0.5;window_weight=1,chat_boost=0.3"] [--modes hybrid]

Embedding knobs (`--context`, `--no-speaker`, `--title`, `--windows`, `--stride`, `--chat-doc`) change
what is stored, so each combination gets its own stores under `bench/.cache/variants/` (built once;
vectors come from the embedding cache). Ranking knobs only change the `Fusion` passed to `search_units`;
`--fusions` measures several on the same stores in one run (each `;`-separated item overrides fields of
the one the flags give; `shipped` and `plain` name `storage.search.SHIPPED` and `PLAIN_RRF`). Scores with
the harness's own loaders and metrics; `python -m bench.quality` remains the record of the shipped
configuration.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from statistics import median
from time import perf_counter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.embed_cache import DEFAULT_CACHE, CachingEmbedder
from bench.quality.locomo import CATEGORIES, load_locomo, session_of
from bench.quality.longmemeval import load_longmemeval
from bench.quality.metrics import expand_units, turn_recall
from bench.quality.run_locomo import score_question
from bench.quality.run_longmemeval import score_question as score_lme
from storage import search
from storage.chunking import WINDOW_VECTORS, ChunkOptions
from storage.embedder import FastEmbedder, Vectors
from storage.evidence import ChatEvidence, strongest_first
from storage.library import Library
from storage.models import Conversation
from storage.priors import asks_for_latest
from storage.search import NO_FILTERS, PLAIN_RRF, SHIPPED, Fusion, SearchEngine

ROOT = Path(__file__).resolve().parents[1]
LOCOMO_METRICS = ("recall@5", "recall@10", "recall@25", "recall@50", "session_recall@5")
# What `conversation_search` shows by default: this many chats, each with its best units (`--shown`).
SHOWN_CHATS = 5
LME_METRICS = ("recall_any@5", "recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")


class QueryMemo(CachingEmbedder):
    """Embeds each question once however many fusions ask it: the variants differ only in ranking, and
    on a loaded machine the query embedding is most of a search. (Latency here excludes it.)"""

    memo: dict[str, Vectors]

    def embed_query(self, text: str) -> Vectors:
        if not hasattr(self, "memo"):
            self.memo = {}
        if text not in self.memo:
            self.memo[text] = super().embed_query(text)
        return self.memo[text]


def fusion_variants(base: Fusion, spec: str | None) -> list[tuple[str, Fusion]]:
    if not spec:
        return [("flags", base)]
    kinds = {f.name: f.type for f in fields(Fusion)}
    out = []
    for item in spec.split(";"):
        item = item.strip()
        if item in ("shipped", "plain"):
            out.append((item, SHIPPED if item == "shipped" else PLAIN_RRF))
            continue
        changes: dict[str, float | int | str | bool] = {}
        for pair in filter(None, item.split(",")):
            key, value = (part.strip() for part in pair.split("="))
            kind = kinds[key]
            if kind in (bool, "bool"):
                changes[key] = value.lower() in ("1", "true", "yes")
            else:
                changes[key] = int(value) if kind in (int, "int") else value if kind in (str, "str") else float(value)
        out.append((item, replace(base, **changes)))  # type: ignore[arg-type]  # fields checked above
    return out


def open_store(home: Path, embedder: QueryMemo, options: ChunkOptions, chats: list[Conversation]) -> Library:
    library = Library.open(home, embedder=embedder, chunk_options=options)
    if library.is_empty():
        library.import_conversations(chats)
    return library


def ranked(library: Library, question: str, mode: str, fusion: Fusion, times: list[float]) -> list[tuple[str, str]]:
    start = perf_counter()
    units = library.search_units(question, limit=100, mode=mode, fusion=fusion)  # type: ignore[arg-type]
    times.append(perf_counter() - start)
    return expand_units([[(u.conversation_id, m) for m in u.message_ids] for u in units])


def shown(library: Library, question: str, mode: str, fusion: Fusion) -> set[str]:
    """The messages `SearchEngine.search` would show as matches in its first chats (strong chats first,
    at its depth; each chat's best units, before they are widened to a question and its answer)."""
    engine = library.engine
    ranking = engine.rank(question, limit=search.SEARCH_DEPTH, mode=mode, filters=NO_FILTERS, fusion=fusion)  # type: ignore[arg-type]
    in_chat: dict[str, list[tuple[str, float]]] = {}
    for pair in ranking.fused:
        in_chat.setdefault(ranking.units[pair[0]].conversation_id, []).append(pair)
    none = ChatEvidence()
    chats = strongest_first((c, ranking.evidence.get(c, none).strength(ranking.weights)) for c in in_chat)
    chats = chats[:SHOWN_CHATS]
    turns = {
        str(m)
        for c in chats
        for unit in SearchEngine._shown_units(in_chat[c], ranking.units, ranking.direct)
        for m in unit.message_ids
    }
    return turns


def run_locomo(args: argparse.Namespace, store: Callable[[str, list[Conversation]], Library]) -> None:
    samples = [(s, store(s.sample_id, s.conversations)) for s in load_locomo(args.data / "locomo" / "locomo_dev.json")]
    for mode in args.modes.split(","):
        for name, fusion in fusion_variants(args.fusion, args.fusions):
            rows: list[tuple[int, dict[str, float]]] = []
            latest: list[float] = []
            times: list[float] = []
            seen: list[tuple[float, float]] = []  # shown: evidence sessions among the chats, evidence turns
            for sample, library in samples:
                for q in sample.questions:
                    turns = [m for _, m in ranked(library, q.question, mode, fusion, times)]
                    rows.append((q.category, score_question(turns, q.evidence)))
                    if args.shown:
                        held = shown(library, q.question, mode, fusion)
                        gold = {session_of(e) for e in q.evidence}
                        chat_sessions = {session_of(t) for t in held}  # every chat shown holds a unit
                        seen.append(
                            (
                                len(gold & chat_sessions) / len(gold) if gold else 1.0,
                                len(set(q.evidence) & held) / len(q.evidence) if q.evidence else 1.0,
                            )
                        )
                    if asks_for_latest(q.question):
                        latest.append(rows[-1][1]["recall@10"])
            scores = {m: round(100 * sum(r[m] for _, r in rows) / len(rows), 1) for m in LOCOMO_METRICS}
            by_cat: dict[int, list[float]] = defaultdict(list)
            for category, r in rows:
                by_cat[category].append(r["recall@10"])
            cats = {CATEGORIES[c]: round(100 * sum(v) / len(v), 1) for c, v in sorted(by_cat.items())}
            cue = f"latest-cue R@10 {100 * sum(latest) / max(1, len(latest)):.1f} (n={len(latest)})"
            if seen:
                cue += (
                    f" shown ({SHOWN_CHATS} chats): evidence sessions {100 * sum(s for s, _ in seen) / len(seen):.1f}"
                    f" evidence turns {100 * sum(t for _, t in seen) / len(seen):.1f}"
                )
            print(
                f"{args.tag} [{name}] {mode}: {scores} R@10 by category {cats} {cue} "
                f"median {1000 * median(times):.1f} ms",
                flush=True,
            )


def run_lme(args: argparse.Namespace, store: Callable[[str, list[Conversation]], Library]) -> None:
    questions = load_longmemeval(args.data / "longmemeval" / "longmemeval_s_dev.json", None, args.lme_per_type)
    prepared = []
    for q in questions:
        haystack = q.haystack(args.lme_variant)
        prepared.append((q, haystack, store(q.question_id, haystack.conversations)))
    for mode in args.modes.split(","):
        for name, fusion in fusion_variants(args.fusion, args.fusions):
            strict: list[dict[str, float]] = []
            by_type: dict[str, list[float]] = defaultdict(list)
            turns10: list[float] = []
            times: list[float] = []
            for q, haystack, library in prepared:
                turns = ranked(library, q.question, mode, fusion, times)
                sessions = list(dict.fromkeys(haystack.session_of[cid] for cid, _ in turns))
                if not q.abstention:
                    by_type[q.question_type].append(score_lme(sessions, q.gold_sessions)["ndcg_any@5"])
                if q.strict and not q.abstention:
                    strict.append(score_lme(sessions, q.gold_sessions))
                if haystack.answer_turns and not q.abstention:
                    turns10.append(turn_recall(turns, haystack.answer_turns, 10))
            scores = {m: round(sum(r[m] for r in strict) / len(strict), 3) for m in LME_METRICS}
            turn10 = round(sum(turns10) / len(turns10), 3)
            types = {t: round(sum(v) / len(v), 3) for t, v in sorted(by_type.items())}
            print(
                f"{args.tag} lme-{args.lme_variant} [{name}] {mode}: strict n={len(strict)} {scores} turn R@10 "
                f"{turn10} ndcg_any@5 by type (no abstention) {types} median {1000 * median(times):.1f} ms",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--bench", choices=["locomo", "lme"], default="locomo")
    parser.add_argument("--lme-per-type", type=int)
    parser.add_argument("--lme-variant", choices=["user", "full"], default="user")
    parser.add_argument("--stores", type=Path, help="where the stores are kept (default bench/.cache/variants)")
    parser.add_argument("--window-words", type=int, default=ChunkOptions().window_words)
    parser.add_argument("--window-title", action="store_true")
    parser.add_argument("--window-vectors", choices=WINDOW_VECTORS, default=ChunkOptions().window_vectors)
    parser.add_argument("--embed-cache", type=Path, default=DEFAULT_CACHE, help="on-disk document embedding cache")
    parser.add_argument("--context", type=int, default=ChunkOptions().previous_words)
    parser.add_argument("--no-speaker", action="store_true")
    parser.add_argument("--title", action="store_true")
    parser.add_argument("--windows", type=int, default=ChunkOptions().window_size)
    parser.add_argument("--stride", type=int, default=ChunkOptions().window_stride)
    parser.add_argument("--chat-doc", action="store_true", default=ChunkOptions().chat_document)
    parser.add_argument("--k", type=int, default=SHIPPED.k)
    parser.add_argument("--vector-weight", type=float, default=SHIPPED.vector_weight)
    parser.add_argument("--chat-boost", type=float, default=SHIPPED.chat_boost)
    parser.add_argument("--chat-units", type=int, default=SHIPPED.chat_units)
    parser.add_argument("--neighbour", type=float, default=SHIPPED.neighbour_share)
    parser.add_argument("--window-weight", type=float, default=SHIPPED.window_weight)
    parser.add_argument("--chat-doc-weight", type=float, default=SHIPPED.chat_doc_weight)
    parser.add_argument("--fusions", help="several fusions on the same stores, ';'-separated field=value lists")
    parser.add_argument("--modes", default="hybrid")
    parser.add_argument(
        "--shown", action="store_true", help="LoCoMo: also score what conversation_search shows (a second ranking)"
    )
    parser.add_argument(
        "--search-depth", type=int, default=search.SEARCH_DEPTH, help="--shown: how deep the search reads each leg"
    )
    args = parser.parse_args()
    search.SEARCH_DEPTH = args.search_depth

    options = ChunkOptions(
        title=args.title,
        previous_words=args.context,
        speaker=not args.no_speaker,
        window_size=args.windows,
        window_stride=args.stride,
        window_words=args.window_words,
        window_title=args.window_title,
        window_vectors=args.window_vectors,
        chat_document=args.chat_doc,
    )
    args.fusion = replace(
        SHIPPED,
        k=args.k,
        vector_weight=args.vector_weight,
        chat_boost=args.chat_boost,
        chat_units=args.chat_units,
        neighbour_share=args.neighbour,
        window_weight=args.window_weight,
        chat_doc_weight=args.chat_doc_weight,
    )
    args.tag = (
        f"ctx{options.previous_words}-{'spk' if options.speaker else 'nospk'}-{'title' if options.title else 'notitle'}"
        + (f"-win{options.window_size}s{options.window_stride}" if options.window_size > 1 else "")
        + (f"-ww{options.window_words}" if options.window_words != ChunkOptions().window_words else "")
        + ("-wtitle" if options.window_title else "")
        + (f"-wv{options.window_vectors}" if options.window_vectors != "model" else "")
        + ("-chatdoc" if options.chat_document else "")
    )
    embedder = QueryMemo(FastEmbedder(), args.embed_cache)
    base = (args.stores or ROOT / "bench" / ".cache" / "variants") / args.tag

    def store(name: str, chats: list[Conversation]) -> Library:
        folder = base / (f"lme-{args.lme_variant}" if args.bench == "lme" else "")
        return open_store(folder / name, embedder, options, chats)

    (run_lme if args.bench == "lme" else run_locomo)(args, store)
    print(f"embedded {embedder.misses} new texts, {embedder.hits} from the cache", file=sys.stderr)


if __name__ == "__main__":
    main()
