"""How far a model can trust `strength`: on the realistic corpus's labelled questions, and on LongMemEval.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/quality/strength.py --corpus [--store DIR]
    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/quality/strength.py [--limit N]

`--corpus`: every question of `tests/fixtures/corpus/strength.json` (answerable, paraphrased and
unanswerable ones, written apart from the ranking's own queries) and of `queries.json`, through
`Library.search(question, max_results=5)`, what conversation_search shows: hit@1 and hit@5 of the
answering chat; how many correct first places are labelled strong (recall); how many strong chats are
the answering chat (precision: harsh, a neighbouring chat on the same topic counts against it); and how
many unanswerable questions get no strong chat at all. Then, through an in-memory MCP client and
`conversation_search` with its defaults: for each answerable question whose one strong chat is the
answering chat, the text's size and whether the answering message is shown.

LongMemEval (the default), user turns:

For each question, one fresh store of its haystack, and `Library.search(question, max_results=10)`:
- own question: is an evidence session shown, and is it strong? What share of strong chats are evidence
  sessions (a harsh measure: other sessions of the same user may be on the same topic)?
- another question's text against this haystack (its evidence is not there): how often is any chat
  strong? And nonsense / meta-word queries: never strong, ideally.
Also prints the best vector similarity of evidence units vs. the best of other units, which is what
`storage.evidence.STRONG_SIMILARITY` was checked against.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality.cli import LME_FILE
from bench.quality.embed_cache import DEFAULT_CACHE, CachingEmbedder
from bench.quality.longmemeval import load_longmemeval
from bench.quality.retrieve import ImportTiming, fresh_store
from storage.embedding.embedder import FastEmbedder
from storage.library import Library
from storage.units.passages import WINDOW_VECTORS, ChunkOptions

ROOT = Path(__file__).resolve().parents[2]
COUNTS = ("own_shown", "own_strong", "strong_total", "strong_gold", "foreign_strong", "nonsense_strong")
NONSENSE = ["purple elephant quantum banana", "what did we discuss yesterday", "do you remember our conversation"]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def corpus(store: Path | None) -> None:
    """The labelled questions over the realistic corpus."""
    import json
    import tempfile

    from importers.registry import read

    lib = Library.open(store or Path(tempfile.mkdtemp(prefix="pastchats-strength-")))
    if lib.is_empty():
        conversations, _ = read(CORPUS / "chats.jsonl")
        lib.import_conversations(conversations)
    labelled = json.loads((CORPUS / "strength.json").read_text(encoding="utf-8"))["questions"]
    tuned = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))
    sets = {
        "answerable": [q for q in labelled if q["kind"] == "answerable"],
        "paraphrase": [q for q in labelled if q["kind"] == "paraphrase"],
        "queries.json": tuned,
    }
    totals = dict.fromkeys(("n", "hit1", "hit5", "first_strong", "strong", "strong_gold"), 0)
    print("corpus, conversation_search's order (strong chats first), max_results=5")
    for name, questions in sets.items():
        tally = dict.fromkeys(totals, 0)
        for question in questions:
            chats = lib.search(question["query"], max_results=5).chats
            uris = [hit.uri for hit in chats]
            first = chats[0] if chats else None
            tally["n"] += 1
            tally["hit1"] += first is not None and first.uri == question["expect_chat"]
            tally["hit5"] += question["expect_chat"] in uris
            tally["first_strong"] += (
                first is not None and first.uri == question["expect_chat"] and first.strength == "strong"
            )
            tally["strong"] += sum(hit.strength == "strong" for hit in chats)
            tally["strong_gold"] += sum(
                hit.strength == "strong" and hit.uri == question["expect_chat"] for hit in chats
            )
        for key in totals:
            totals[key] += tally[key]
        print(_corpus_line(name, tally))
    print(_corpus_line("all answerable", totals))
    unanswerable = [q for q in labelled if q["kind"] == "unanswerable"]
    clean = [
        q for q in unanswerable if all(hit.strength == "weak" for hit in lib.search(q["query"], max_results=5).chats)
    ]
    share = len(clean) / len(unanswerable)
    print(f"  unanswerable: no strong chat for {len(clean)}/{len(unanswerable)} ({share:.0%})")
    for question in unanswerable:
        if question not in clean:
            strong = [hit.uri for hit in lib.search(question["query"], max_results=5).chats if hit.strength == "strong"]
            print(f"    strong for {question['query']!r}: {', '.join(strong)}")
    asyncio.run(_one_strong_chat(lib, [q for q in labelled if q["kind"] != "unanswerable"]))
    lib.close()


async def _one_strong_chat(lib: Library, questions: list[dict[str, Any]]) -> None:
    """What the model reads when one chat is strong and it is the answering one."""
    from mcp import Client
    from mcp.types import TextContent

    from server.app import build_server
    from server.settings import Settings

    sizes, unanswered = [], []
    async with Client(build_server(Settings(home=lib.home), lambda _: lib)) as client:
        for question in questions:
            result = await client.call_tool("conversation_search", {"query": question["query"]})
            data = result.structured_content or {}
            strong = [hit for hit in data.get("chats", []) if hit["strength"] == "strong"]
            if [hit["uri"] for hit in strong] != [question["expect_chat"]]:
                continue
            [block] = result.content
            assert isinstance(block, TextContent)
            sizes.append(len(block.text))
            shown = {m["id"] for match in strong[0]["matches"] for m in match["messages"]}
            if question["expect_messages"][-1] not in shown:
                unanswered.append(question["query"])
    sizes.sort()
    print(
        f"  one strong chat, the answering one (MCP, defaults): {len(sizes)} searches, characters median "
        f"{sizes[len(sizes) // 2]:,}, max {sizes[-1]:,}, over 5,000 {sum(s > 5_000 for s in sizes)}; answering "
        f"message shown {len(sizes) - len(unanswered)}/{len(sizes)}"
    )
    for query in unanswered:
        print(f"    answer not shown for {query!r}")


def _corpus_line(name: str, tally: dict[str, int]) -> str:
    n, hit1 = tally["n"], tally["hit1"]
    recall = tally["first_strong"] / hit1 if hit1 else 0.0
    precision = tally["strong_gold"] / tally["strong"] if tally["strong"] else 0.0
    return (
        f"  {name:15} hit@1 {hit1:3}/{n:<3} hit@5 {tally['hit5']:3}/{n:<3}  correct first places strong "
        f"{tally['first_strong']}/{hit1} ({recall:.0%})  strong chats that answer {tally['strong_gold']}/"
        f"{tally['strong']} ({precision:.0%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--embed-cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--window-vectors", choices=WINDOW_VECTORS, default=ChunkOptions().window_vectors)
    parser.add_argument("--corpus", action="store_true", help="the labelled questions over the realistic corpus")
    parser.add_argument("--store", type=Path, help="with --corpus: a store to reuse (built from the corpus when empty)")
    args = parser.parse_args()
    if args.corpus:
        corpus(args.store)
        return
    embedder = CachingEmbedder(FastEmbedder(), args.embed_cache)
    options = ChunkOptions(window_vectors=args.window_vectors)
    questions = [q for q in load_longmemeval(args.data / LME_FILE, args.limit) if not q.abstention]
    timing = ImportTiming()
    tally = dict.fromkeys(COUNTS, 0)
    gold_sims: list[float] = []
    other_sims: list[float] = []
    for position, question in enumerate(questions):
        haystack = question.haystack("user")
        foreign = questions[(position + 1) % len(questions)].question

        def open_library(home: Path) -> Library:
            return Library.open(home, embedder=embedder, chunk_options=options)

        with fresh_store(open_library, haystack.conversations, timing, None) as lib:
            gold = {cid for cid, session in haystack.session_of.items() if session in question.gold_sessions}
            result = lib.search(question.question, max_results=10)
            shown_gold = [hit for hit in result.chats if hit.uri in gold]
            tally["own_shown"] += bool(shown_gold)
            tally["own_strong"] += any(hit.strength == "strong" for hit in shown_gold)
            strong = [hit for hit in result.chats if hit.strength == "strong"]
            tally["strong_total"] += len(strong)
            tally["strong_gold"] += sum(hit.uri in gold for hit in strong)
            tally["foreign_strong"] += any(
                hit.strength == "strong" for hit in lib.search(foreign, max_results=10).chats
            )
            tally["nonsense_strong"] += sum(
                any(hit.strength == "strong" for hit in lib.search(query, max_results=10).chats) for query in NONSENSE
            )
            ranking = lib.engine.rank(question.question, mode="vector")
            for cid, evidence in ranking.evidence.items():
                if evidence.similarity is not None:
                    (gold_sims if cid in gold else other_sims).append(evidence.similarity)
    n = len(questions)
    print(f"LongMemEval user turns, {n} questions (abstention left out)")
    shown, strong_shown = tally["own_shown"], tally["own_strong"]
    print(f"  own question: an evidence session shown in {shown}/{n}, shown strong in {strong_shown}/{n}")
    print(f"  strong chats that are evidence sessions: {tally['strong_gold']}/{tally['strong_total']}")
    print(f"  another question's text: some chat strong in {tally['foreign_strong']}/{n} haystacks")
    searches = n * len(NONSENSE)
    print(f"  nonsense and meta-word queries: some chat strong in {tally['nonsense_strong']}/{searches} searches")
    for name, sims in (("evidence sessions", gold_sims), ("other sessions", other_sims)):
        ordered = sorted(sims)
        share = sum(s >= 0.5 for s in ordered) / len(ordered)
        print(
            f"  best similarity, {name}: median {statistics.median(ordered):.2f}, "
            f"p90 {ordered[int(0.9 * len(ordered))]:.2f}, at or above 0.5: {share:.1%}"
        )
    embedder.close()


if __name__ == "__main__":
    main()
