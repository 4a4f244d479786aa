"""Start-up and serving memory of `pastchats serve` as a client really starts it (stdio, minimal env).

The server gets only HOME (an empty temporary one: background sync finds no agent logs), PATH,
PASTCHATS_HOME and FASTEMBED_CACHE_PATH (where a real install finds the model in its own cache).
Baselines in the same run: a bare interpreter start and a minimal MCP SDK server (one tool).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

SETTLE_SECONDS = 5.0  # after the first result, before the searches timed for memory and latency

MINIMAL_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer(name="minimal")

@server.tool()
def echo(text: str) -> str:
    return text

server.run()
"""


def minimal_env(home: Path | None, user_home: Path) -> dict[str, str]:
    env = {"HOME": str(user_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if home is not None:
        env["PASTCHATS_HOME"] = str(home)
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    if cache:
        env["FASTEMBED_CACHE_PATH"] = cache
    return env


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.append(int(entry.name))
    return found


def memory_of(pid: int) -> dict[str, float]:
    """Resident memory in MB: total, anonymous, file-backed (shared page cache), peak, and PSS."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            out["Pss"] = int(line.split()[1]) / 1024
    # Whether the server had to load LanceDB (its native library is mapped once it is imported).
    out["lancedb_loaded"] = float("lancedb" in Path(f"/proc/{pid}/maps").read_text())
    return out


def mappings_of(pid: int, top: int = 12) -> list[tuple[str, float, float]]:
    """The largest resident mappings by file (anonymous ones as `[anon]`, `[heap]`): (name, RSS MB,
    of which anonymous MB), from /proc/PID/smaps: where the memory goes, library by library."""
    sizes: dict[str, list[float]] = {}
    name = "[anon]"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            name = (
                Path(parts[5]).name
                if len(parts) > 5 and parts[5].startswith("/")
                else (parts[5] if len(parts) > 5 else "[anon]")
            )
            sizes.setdefault(name, [0.0, 0.0])
        elif parts and parts[0] == "Rss:":
            sizes[name][0] += int(parts[1]) / 1024
        elif parts and parts[0] == "Anonymous:":
            sizes[name][1] += int(parts[1]) / 1024
    ranked = sorted(sizes.items(), key=lambda item: -item[1][0])[:top]
    return [(key, round(rss, 1), round(anon, 1)) for key, (rss, anon) in ranked]


async def _session(
    params: StdioServerParameters, queries: list[str], rss_after: int
) -> tuple[float, float | None, dict[str, Any]]:
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        initialized = time.perf_counter() - started
        first: float | None = None
        memory: dict[str, Any] = {}
        if queries:
            result = await client.call_tool("conversation_search", {"query": queries[0]})
            first = time.perf_counter() - started
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
        if rss_after:
            await anyio.sleep(SETTLE_SECONDS)  # background work after start-up settles first
            searches = []
            for i in range(rss_after):
                sent = time.perf_counter()
                await client.call_tool("conversation_search", {"query": queries[i % len(queries)], "max_results": 10})
                searches.append(time.perf_counter() - sent)
                if i % 5 == 4:
                    await client.call_tool("recent_chats", {"n": 10})
            pids = _children()
            if pids:
                memory = memory_of(pids[-1])
                memory["mappings"] = mappings_of(pids[-1])
            searches.sort()
            memory["search_ms"] = {
                "p50": round(1000 * searches[len(searches) // 2], 1),
                "p95": round(1000 * searches[min(len(searches) - 1, int(len(searches) * 0.95))], 1),
            }
    return initialized, first, memory


def spawn_pastchats(
    home: Path, queries: list[str], rss_after: int = 0, command: Path | None = None
) -> tuple[float, float | None, dict[str, Any]]:
    """`pastchats serve` (this install's, or `command`) on `home`: seconds to `initialize`, to the first
    search result, and its memory after `rss_after` more searches."""
    pastchats = command or Path(sys.executable).parent / "pastchats"
    with tempfile.TemporaryDirectory() as user_home:
        params = StdioServerParameters(command=str(pastchats), args=["serve"], env=minimal_env(home, Path(user_home)))
        return anyio.run(_session, params, queries, rss_after)


def spawn_minimal() -> float:
    with tempfile.TemporaryDirectory() as user_home:
        script = Path(user_home) / "minimal_server.py"
        script.write_text(MINIMAL_SERVER)
        params = StdioServerParameters(
            command=sys.executable, args=[str(script)], env=minimal_env(None, Path(user_home))
        )
        initialized, _, _ = anyio.run(_session, params, [], 0)
        return initialized


def bare_interpreter() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def minimal_memory() -> dict[str, float]:
    """RSS of the minimal SDK server after answering a call: the floor any Python MCP server pays."""

    async def session() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as user_home:
            script = Path(user_home) / "minimal_server.py"
            script.write_text(MINIMAL_SERVER)
            env = minimal_env(None, Path(user_home))
            async with Client(StdioServerParameters(command=sys.executable, args=[str(script)], env=env)) as client:
                await client.call_tool("echo", {"text": "x"})
                pids = _children()
                return memory_of(pids[-1]) if pids else {}

    result: dict[str, Any] = anyio.run(session)
    return result


def compare(home: Path, rounds: int, against: Path | None, searches: int) -> dict[str, Any]:
    """Alternating rounds of the minimal SDK server, this install's `pastchats serve` and `against`
    (another install's `pastchats`): medians of spawn -> `initialize` and -> first result, and each
    pastchats' memory after `searches` more searches (last round)."""
    from bench.corpus.synthetic import queries

    commands = {"this install": None} | ({"against": against} if against else {})
    found: dict[str, dict[str, list[float]]] = {"minimal SDK server": {"initialize": []}}
    found |= {label: {"initialize": [], "first_result": []} for label in commands}
    memory: dict[str, dict[str, Any]] = {}
    qs = queries(count=rounds)
    for i in range(rounds):
        found["minimal SDK server"]["initialize"].append(spawn_minimal())
        for label, command in commands.items():
            last = i == rounds - 1
            initialized, first, used = spawn_pastchats(home, [qs[i]], searches if last else 0, command)
            found[label]["initialize"].append(initialized)
            found[label]["first_result"].append(first or 0.0)
            if last:
                memory[label] = used
    medians = {label: {k: round(statistics.median(v), 3) for k, v in times.items()} for label, times in found.items()}
    floor = medians["minimal SDK server"]["initialize"]
    for label in commands:
        medians[label]["initialize_x_minimal"] = round(medians[label]["initialize"] / floor, 2)
    return {"rounds": rounds, "medians": medians, "all": found, "memory": memory, "minimal_memory": minimal_memory()}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Start-up and memory of `pastchats serve` as a client starts it.")
    parser.add_argument("--home", type=Path, required=True, help="a store (a copy: it is opened for serving)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another install's `pastchats`, measured in the same rounds")
    parser.add_argument("--searches", type=int, default=20, help="searches before memory is read (last round)")
    args = parser.parse_args()
    print(json.dumps(compare(args.home, args.rounds, args.against, args.searches), indent=1))
