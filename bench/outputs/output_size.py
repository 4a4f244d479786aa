"""How much of the model's context pastchats takes: tool results and the tool list, in tokens.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python bench/outputs/output_size.py [--store DIR]

Tool results are produced by the tools' own code (the text an MCP client receives) over the realistic
test corpus, for every corpus query at max_results 1, 5 and 10, and for recent_chats n 3 and 20 (both
orders). The tool list is what `tools/list` returns (name, description, input schema; the output
schemas separately) plus the server's instructions.

Tokens are counted with the WordPiece tokenizer of the embedding model (all-MiniLM-L6-v2, from the
model cache): an offline stand-in for the client model's own tokenizer, which is not available here.
For English prose both land within ~10-20% of each other; chars/4 is printed as a second estimate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp import Client
from tokenizers import Tokenizer

from importers.registry import read
from server.app import build_server
from server.settings import Settings
from storage.library import Library
from tools.conversation_search import search
from tools.instructions import INSTRUCTIONS
from tools.recent_chats import recent

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def tokenizer(cache: Path) -> Tokenizer:
    found = sorted(cache.glob("*all-MiniLM-L6-v2*/**/tokenizer.json"))
    if not found:
        raise SystemExit(f"no all-MiniLM-L6-v2 tokenizer.json under {cache}")
    loaded = Tokenizer.from_file(str(found[0]))
    loaded.no_truncation()  # the model's file cuts at 128 word pieces; here every piece counts
    loaded.no_padding()
    return loaded


def summary(texts: list[str], count: Any) -> str:
    tokens = sorted(count(text) for text in texts)
    chars = sorted(len(text) for text in texts)
    p95 = tokens[min(len(tokens) - 1, int(0.95 * len(tokens)))]
    chats = [text.count("\n<chat ") + text.startswith("<chat ") for text in texts]
    return (
        f"n={len(texts):3}  chats shown median {statistics.median(chats):4.1f} min {min(chats):2}"
        f"  tokens median {statistics.median(tokens):6.0f}  p95 {p95:6}  max {tokens[-1]:6}"
        f"  | chars median {statistics.median(chars):6.0f}  max {chars[-1]:6}  (chars/4 median "
        f"{statistics.median(chars) / 4:5.0f})"
    )


async def tool_list(lib: Library) -> tuple[str, str]:
    async with Client(build_server(Settings(home=lib.home), lambda _: lib)) as client:
        tools = (await client.list_tools()).tools
    shown = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools]
    outputs = [{"name": t.name, "outputSchema": t.output_schema} for t in tools]
    return json.dumps(shown, ensure_ascii=False), json.dumps(outputs, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="a store to reuse (built from the corpus when empty)")
    parser.add_argument("--model-cache", type=Path, default=ROOT.parent / "shared" / "fastembed_cache")
    args = parser.parse_args()
    wordpiece = tokenizer(args.model_cache)

    def count(text: str) -> int:
        return len(wordpiece.encode(text, add_special_tokens=False).ids)

    lib = Library.open(args.store or Path(tempfile.mkdtemp(prefix="pastchats-size-")), cache_dir=args.model_cache)
    if lib.is_empty():
        conversations, _ = read(CORPUS / "chats.jsonl")
        lib.import_conversations(conversations)
    queries = [q["query"] for q in json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))]
    for n in (1, 5, 10):
        texts = [search(lib, query, max_results=n)[1] for query in queries]
        print(f"conversation_search max_results={n:2}: {summary(texts, count)}")
    for n in (3, 20):
        texts = [recent(lib, n=n, sort_order=order)[1] for order in ("desc", "asc")]
        print(f"recent_chats n={n:2} (desc, asc):        {summary(texts, count)}")
    shown, outputs = asyncio.run(tool_list(lib))
    print(f"tool list (names, descriptions, input schemas): {count(shown)} tokens, {len(shown)} chars")
    print(f"server instructions: {count(INSTRUCTIONS)} tokens, {len(INSTRUCTIONS)} chars")
    print(f"output schemas (structured content, not usually shown to the model): {count(outputs)} tokens")


if __name__ == "__main__":
    main()
