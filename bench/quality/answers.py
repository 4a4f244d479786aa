"""Can a model trust the first answer it gets? Labelled questions over one person's year, through MCP.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python -m bench.quality.answers [--store DIR]
    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python -m bench.quality.answers --longmemeval

The store is `bench/corpus/answers/chats.jsonl` (Maya's 2025-2026: decisions later reversed, chats named only
by their title, a long chat that ends with its answer, a chat of long messages); the questions,
`bench/corpus/answers/questions.json`.
Each question is one `conversation_search` call with its defaults, through the in-memory MCP client,
as a model makes it. Reported:
- update questions: the newer chat first and strong, or both chats shown with the older one marked
  as superseded by the newer (its block or line names the newer chat's title);
- title-only questions: the titled chat first and strong;
- strength contradictions, in every result: a strong chat holding none of the query's words whose
  meaning is not close; a weak chat holding every query word with a close meaning;
- answerable questions (updates, titles and the rest): the expected chat first, with one of its
  answering messages shown;
- unanswerable questions: no strong chat; every result without a strong chat within 2,500 characters;
- paging: read_chat on a chat of 24 long messages from its middle, every Earlier and Later call
  followed: messages per call.

`--longmemeval`: LongMemEval_S's knowledge-update questions (dev split, user turns), one fresh store
each: is the newest evidence session shown before the older ones (or the older one marked superseded)?
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from bench.quality.embed_cache import DEFAULT_CACHE, CachingEmbedder
from storage.library import Library

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "corpus" / "answers"
NO_STRONG_CHARS = 2_500
FOLLOW = re.compile(r"(Earlier messages|Later messages): read_chat\((.*?)\)\.(?:\n|$)")


def chat_text(text: str, uri: str) -> str:
    """The part of a result's text that shows one chat: its block, or its line."""
    start = text.find(f"<chat uri='{uri}'")
    if start < 0:
        return ""
    end = text.find("</chat>", start)
    return text[start : end if end >= 0 else len(text)]


def marked_older(text: str, older: str, newer_title: str) -> bool:
    """The older chat's block or line says a newer chat supersedes it, by the newer one's title."""
    shown = chat_text(text, older)
    return "newer" in shown.lower() and newer_title in shown


def contradictions(chats: list[dict[str, Any]]) -> list[str]:
    found = []
    for hit in chats:
        evidence = hit.get("evidence") or {}
        meaning = evidence.get("meaning")
        if hit["strength"] == "strong" and not evidence.get("matched") and meaning != "close":
            found.append(f"{hit['uri']} strong with none of the words, meaning {meaning}")
        if hit["strength"] == "weak" and not evidence.get("missing") and meaning == "close":
            found.append(f"{hit['uri']} weak with every word and a close meaning")
    return found


async def run(lib: Library) -> dict[str, Any]:
    from mcp import Client
    from mcp.types import TextContent

    from server.app import build_server
    from server.settings import Settings

    questions = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))["questions"]
    titles = {hit.uri: hit.title for hit in lib.recent(n=1000).chats}
    tally: dict[str, list[str]] = {
        key: [] for key in ("update", "update_ok", "title", "title_ok", "answerable", "answerable_ok", "unanswerable")
    }
    tally |= {"unanswerable_ok": [], "contradictions": [], "no_strong": [], "no_strong_over": []}
    async with Client(build_server(Settings(home=lib.home), lambda _: lib)) as client:
        for question in questions:
            result = await client.call_tool("conversation_search", {"query": question["query"]})
            [block] = result.content
            assert isinstance(block, TextContent)
            text = block.text
            chats = (result.structured_content or {}).get("chats", [])
            first = chats[0] if chats else None
            strong = [hit for hit in chats if hit["strength"] == "strong"]
            kind, query = question["kind"], question["query"]
            tally["contradictions"] += [f"{query!r}: {c}" for c in contradictions(chats)]
            if not strong:
                tally["no_strong"].append(query)
                if len(text) > NO_STRONG_CHARS:
                    tally["no_strong_over"].append(f"{query!r}: {len(text):,} characters")
            if kind == "unanswerable":
                tally["unanswerable"].append(query)
                if not strong:
                    tally["unanswerable_ok"].append(query)
                continue
            expected = question["expect_chat"]
            first_right = first is not None and first["uri"] == expected
            first_strong = first_right and first is not None and first["strength"] == "strong"
            shown = {m["id"] for match in (first or {}).get("matches", []) for m in match["messages"]}
            tally["answerable"].append(query)
            if first_right and shown & set(question["expect_messages"]):
                tally["answerable_ok"].append(query)
            if kind == "update":
                tally["update"].append(query)
                uris = [hit["uri"] for hit in chats]
                both = expected in uris and question["older_chat"] in uris
                if first_strong or (both and marked_older(text, question["older_chat"], titles[expected])):
                    tally["update_ok"].append(query)
            if kind == "title":
                tally["title"].append(query)
                if first_strong:
                    tally["title_ok"].append(query)
        pages = await paging(client, "runbook-review", 12)
    return tally | {"pages": pages}


async def paging(client: Any, uri: str, around: int) -> list[int]:
    """Messages in each call of reading `uri` from message `around` to both ends by the offered calls."""
    from mcp.types import TextContent

    sizes = []
    for label in ("Earlier messages", "Later messages"):
        arguments: dict[str, Any] = {"uri": uri, "around": around}
        for _ in range(100):
            result = await client.call_tool("read_chat", arguments)
            [block] = result.content
            assert isinstance(block, TextContent)
            sizes.append(len((result.structured_content or {}).get("messages", [])))
            following = dict(FOLLOW.findall(block.text)).get(label)
            if following is None:
                break
            call = ast.parse(f"f({following})", mode="eval").body
            assert isinstance(call, ast.Call)
            arguments = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    return sizes


def report(tally: dict[str, Any]) -> None:
    def share(ok: str, of: str) -> str:
        return f"{len(tally[ok])}/{len(tally[of])}"

    print(f"update questions, the newer chat first and strong or the older marked: {share('update_ok', 'update')}")
    print(f"title-only questions, the titled chat first and strong: {share('title_ok', 'title')}")
    print(
        f"answerable, the expected chat first with an answering message shown: {share('answerable_ok', 'answerable')}"
    )
    print(f"unanswerable, no strong chat: {share('unanswerable_ok', 'unanswerable')}")
    print(f"strength contradictions: {len(tally['contradictions'])}")
    print(f"results without a strong chat over {NO_STRONG_CHARS:,} characters: {len(tally['no_strong_over'])}")
    pages = tally["pages"]
    print(f"read_chat paging: {len(pages)} calls, messages per call {pages} (fewest {min(pages)})")
    for key, wanted in (("update", "update_ok"), ("title", "title_ok"), ("answerable", "answerable_ok")):
        for query in tally[key]:
            if query not in tally[wanted]:
                print(f"  missed ({key}): {query!r}")
    for query in tally["unanswerable"]:
        if query not in tally["unanswerable_ok"]:
            print(f"  strong for unanswerable: {query!r}")
    for line in tally["contradictions"] + tally["no_strong_over"]:
        print(f"  {line}")


def longmemeval(data: Path, embed_cache: Path) -> None:
    """The newest evidence session of each knowledge-update question against the older ones."""
    from bench.quality.cli import LME_FILE
    from bench.quality.longmemeval import load_longmemeval
    from bench.quality.retrieve import ImportTiming, fresh_store
    from storage.embedding.embedder import FastEmbedder
    from tools.conversation_search import search

    embedder = CachingEmbedder(FastEmbedder(), embed_cache)
    questions = [
        q
        for q in load_longmemeval(data / LME_FILE)
        if q.question_type == "knowledge-update" and not q.abstention and len(q.gold_sessions) > 1
    ]
    newest_first = marked = shown_any = 0
    timing = ImportTiming()
    for question in questions:
        haystack = question.haystack("user")

        def open_library(home: Path) -> Library:
            return Library.open(home, embedder=embedder)

        with fresh_store(open_library, haystack.conversations, timing, None) as lib:
            when = {c.id: c.updated_at for c in haystack.conversations}
            gold = [cid for cid, session in haystack.session_of.items() if session in question.gold_sessions]
            newest = max(gold, key=lambda cid: when[cid])
            output, text = search(lib, question.question)
            order = [hit.uri for hit in output.chats if hit.uri in gold]
            titles = {hit.uri: hit.title for hit in output.chats}
            shown_any += bool(order)
            if order and order[0] == newest:
                newest_first += 1
            elif newest in order and all(marked_older(text, cid, titles[newest]) for cid in order if cid != newest):
                marked += 1
    n = len(questions)
    print(f"LongMemEval_S knowledge-update (dev, user turns), {n} questions with several evidence sessions:")
    print(f"  an evidence session shown {shown_any}/{n}; the newest one first among them {newest_first}/{n}")
    print(f"  or shown after an older one that is marked superseded: {marked}/{n}")
    embedder.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="a store to reuse (built from the chats when empty)")
    parser.add_argument("--longmemeval", action="store_true", help="LongMemEval_S's knowledge-update questions")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--embed-cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    if args.longmemeval:
        longmemeval(args.data, args.embed_cache)
        return
    from importers.registry import read

    lib = Library.open(args.store or Path(tempfile.mkdtemp(prefix="pastchats-answers-")))
    if lib.is_empty():
        conversations, _ = read(DATA / "chats.jsonl")
        lib.import_conversations(conversations)
    report(asyncio.run(run(lib)))
    lib.close()


if __name__ == "__main__":
    main()
