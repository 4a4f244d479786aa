"""Live memory, measured through a running server: how soon an agent's append is found, and what the
watcher costs while nothing happens.

    python -m bench.performance.perf build --messages 100000 --home STORE --vectors hash
    python -m bench.performance.live --store STORE [--sessions 1000] [--appends 30] [--idle 60] [--out FILE]

1. An agent home: the fixtures' Claude Code, Codex and Gemini CLI logs plus `--sessions` more Claude
   Code sessions (four messages each, fifty projects). `pastchats serve` starts on STORE over stdio
   with a client's minimal environment (HOME, PATH), the real model, sync on; the bench waits until
   its first sync has imported every session and embedded every passage.
2. `--appends` exchanges appended in turn to the three agents' sessions, shaped as each agent writes
   them (`bench.corpus.agent_writes`): the seconds from the append to `conversation_search` (through the
   server) showing the chat for a word only that exchange holds, and to its passages being embedded
   (the store's count of passages awaiting embedding back at zero). p50 and p95 of each.
3. Idle cost: two fresh servers on the now synced store, one watching and one with sync off, each
   warmed by a search; their CPU time over `--idle` seconds (% of one core) and resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.corpus.agent_writes import CHAT_IDS, append_exchange, claude_code_lines, make_agent_home
from bench.performance.perf_spawn import _children, memory_of
from storage.library import Library
from storage.owner_only import restrict_new_files

AGENTS = ["claude-code", "codex", "gemini"]


def add_sessions(home: Path, count: int) -> None:
    """`count` Claude Code sessions of four messages each, over fifty project folders."""
    for n in range(count):
        folder = home / ".claude" / "projects" / f"-home-ana-src-project{n % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        session = f"{n:08d}-aaaa-4000-8000-000000000000"
        path = folder / f"{session}.jsonl"
        path.touch()
        lines = claude_code_lines(
            path, f"How do I set up widget {n} for the dashboard?", f"Widget {n} goes in the panel.", n
        )
        lines += claude_code_lines(path, f"And the colour of widget {n}?", "Blue, to match the theme.", n + 10**6)
        path.write_text("".join(line.replace("5e55e000-1111-4000-8000-000000000001", session) + "\n" for line in lines))


def environment(home: Path, store: Path, sync: bool, log: Path | None = None) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "PASTCHATS_HOME": str(store)}
    if log is not None:
        env |= {"PASTCHATS_LOG_FILE": str(log), "PASTCHATS_LOG_LEVEL": "INFO"}
    for name in ("FASTEMBED_CACHE_PATH", "XDG_CACHE_HOME"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    if not sync:
        env["PASTCHATS_SYNC"] = "false"
    return env


@asynccontextmanager
async def server(env: dict[str, str]) -> AsyncIterator[tuple[Client, int]]:
    before = set(_children())
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli", "serve"], env=env)
    async with Client(params, mode="legacy") as client:
        (pid,) = set(_children()) - before
        yield client, pid


def chats(store: Path) -> int:
    return Library.open(store, load_model=False, heal=False).stats().conversations


def pending(store: Path) -> int:
    return Library.open(store, load_model=False, heal=False).pending_embeddings()


async def shows(client: Client, query: str, uri: str) -> bool:
    """Whether `conversation_search` shows the chat `uri` with the query's word in what it shows (a
    chat found only by the vector leg, for a word it does not hold, does not count)."""
    result = await client.call_tool("conversation_search", {"query": query})
    text = "" if result.is_error else str(getattr(result.content[0], "text", ""))
    blocks = text.split("<chat uri='")[1:]
    return any(block.startswith(uri + "'") and query in block for block in blocks)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2), "max": round(ordered[-1], 2)}


async def measure(store: Path, sessions: int, appends: int, idle: float, log: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="pastchats-live-"))
    home = make_agent_home(work / "home")
    add_sessions(home, sessions)
    messages = Library.open(store, load_model=False, heal=False).stats().messages
    before = chats(store)
    out: dict[str, Any] = {"store_messages": messages, "session_files": sessions + 6, "appends": appends}
    keyword: list[float] = []
    embedded: list[float] = []
    async with server(environment(home, store, sync=True, log=log)) as (client, _):
        start = time.monotonic()
        while chats(store) < before + sessions or pending(store):
            if time.monotonic() - start > 3600:
                raise SystemExit("the first sync did not finish within the hour")
            await anyio.sleep(1)
        out["first_sync_seconds"] = round(time.monotonic() - start, 1)
        for n in range(appends):
            agent, word = AGENTS[n % 3], f"livemark{n}q"
            append_exchange(home, agent, f"Is the {word} setting on?", f"Yes, {word} is on.", 10_000 + n)
            start = time.monotonic()
            while not await shows(client, word, CHAT_IDS[agent]):
                await anyio.sleep(0.05)
            keyword.append(time.monotonic() - start)
            while pending(store):
                await anyio.sleep(0.1)
            embedded.append(time.monotonic() - start)
            print(f"{agent}: keyword {keyword[-1]:.2f} s, embedded {embedded[-1]:.2f} s", file=sys.stderr)
    out["keyword_seconds"] = percentiles(keyword)
    out["embedded_seconds"] = percentiles(embedded)
    for label, sync in (("watching", True), ("sync_off", False)):
        async with server(environment(home, store, sync=sync)) as (client, pid):
            await shows(client, "dashboard widget colour", CHAT_IDS["claude-code"])
            await anyio.sleep(15)  # the watcher's first sync (nothing changed) and start-up settle
            before = cpu_seconds(pid)
            await anyio.sleep(idle)
            used = cpu_seconds(pid) - before
            out[label] = {"cpu_percent_of_one_core": round(100 * used / idle, 3), **memory_of(pid)}
    out["extra_rss_mb"] = round(out["watching"]["VmRSS"] - out["sync_off"]["VmRSS"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.performance.live", description=__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=30)
    parser.add_argument("--idle", type=float, default=60)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--log", type=Path, help="the watching server's log (INFO)")
    args = parser.parse_args()
    restrict_new_files()  # the store's files are made as every pastchats command makes them
    result = anyio.run(measure, args.store, args.sessions, args.appends, args.idle, args.log)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
