"""What the three tools return for a few hundred calls, to check that a speed change changed nothing.

    python -m bench.outputs.tool_outputs dump --home STORE --out before.jsonl [--queries 300]
    python -m bench.outputs.tool_outputs compare before.jsonl after.jsonl

`dump` runs `conversation_search` (plain, filtered by project and time, several `max_results`),
`recent_chats` (pages both ways, windows, projects) and `read_chat` (pages and `around`) through the
tools' own functions, and writes each call's text and structured content as one JSON line. `compare`
reports every call whose output differs, byte for byte. The store is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from bench.corpus.synthetic import queries
from storage.errors import PastchatsError
from storage.library import Library
from tools import conversation_search, read_chat, recent_chats


def calls(library: Library, count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The calls to make: deterministic for a given store."""
    projects = sorted(library.names()[1])[:3] or [None]
    for i, query in enumerate(queries(seed=11, count=count)):
        arguments: dict[str, Any] = {"query": query, "max_results": 1 + i % 10}
        if i % 4 == 1:
            arguments["project"] = projects[i % len(projects)]
        if i % 4 == 2:
            arguments["after"] = datetime(2023 + i % 3, 1 + i % 12, 1, tzinfo=UTC)
        if i % 4 == 3:
            arguments["before"] = datetime(2024, 1 + i % 12, 1, tzinfo=UTC)
        yield "conversation_search", arguments
    for i in range(max(4, count // 10)):
        arguments = {"n": 1 + i % 20, "sort_order": "asc" if i % 3 == 0 else "desc"}
        if i % 5 == 1:
            arguments["before"] = datetime(2023 + i % 3, 1 + i % 12, 1, tzinfo=UTC)
        if i % 5 == 2:
            arguments["after"] = datetime(2024, 1 + i % 12, 1, tzinfo=UTC)
        if i % 5 == 3:
            arguments["project"] = projects[i % len(projects)]
        yield "recent_chats", arguments
    chats = library.recent(n=20).chats
    for i, chat in enumerate(chats):
        yield "read_chat", {"uri": chat.uri, "offset": i % 3, "limit": 5 + i * 3}
        yield "read_chat", {"uri": chat.uri, "around": 1 + i % 4, "limit": 10}
        last = chat.matches[-1].messages[-1] if chat.matches and chat.matches[-1].messages else None
        if last is not None:
            yield "read_chat", {"uri": chat.uri, "around": last.id, "limit": 4}
    yield "read_chat", {"uri": "no-such-chat"}


def run(library: Library, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    try:
        return _run(library, tool, arguments)
    except (PastchatsError, ToolError) as exc:  # the error the model would read is output too
        return f"error: {exc}", None


def _run(library: Library, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    if tool == "conversation_search":
        output, text = conversation_search.search(library, **arguments)
    elif tool == "recent_chats":
        output, text = recent_chats.recent(library, **arguments)
    else:
        output, text = read_chat.read(library, **arguments)
    return text, output.model_dump(mode="json")


def dump(home: Path, out: Path, count: int) -> int:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    library = Library.open(home, cache_dir=Path(cache) if cache else None)
    written = 0
    with out.open("w", encoding="utf-8") as sink:
        for tool, arguments in calls(library, count):
            text, structured = run(library, tool, arguments)
            record = {"tool": tool, "arguments": arguments, "text": text, "structured": structured}
            sink.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
            written += 1
    return written


def compare(before: Path, after: Path) -> int:
    """Print the calls whose output differs; returns how many differ."""
    old = before.read_text(encoding="utf-8").splitlines()
    new = after.read_text(encoding="utf-8").splitlines()
    differing = 0
    if len(old) != len(new):
        print(f"{len(old)} calls before, {len(new)} after")
        differing += abs(len(old) - len(new))
    for a, b in zip(old, new, strict=False):
        if a != b:
            differing += 1
            record = json.loads(a)
            print(f"differs: {record['tool']} {record['arguments']}")
    print(f"{min(len(old), len(new))} calls compared, {differing} differ")
    return differing


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.outputs.tool_outputs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump")
    dumping.add_argument("--home", type=Path, required=True)
    dumping.add_argument("--out", type=Path, required=True)
    dumping.add_argument("--queries", type=int, default=300)
    comparing = commands.add_parser("compare")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        print(f"{dump(args.home, args.out, args.queries)} calls written to {args.out}")
    else:
        sys.exit(1 if compare(args.before, args.after) else 0)


if __name__ == "__main__":
    main()
