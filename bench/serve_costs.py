"""What the serving process pays for its model and its mapped files, each against its alternative, same run.

    python -m bench.serve_costs model-load [--pairs 6]      # the default model: directly or via fastembed
    python -m bench.serve_costs rescore --home STORE        # the vector leg of real searches: pread or map
    python -m bench.serve_costs release --home STORE        # the chat rows' message reads, pages dropped or kept
    python -m bench.serve_costs idle-rss --home STORE [--baseline-pastchats P]  # serve's memory, busy and idle
    python -m bench.serve_costs against --home STORE --other CHECKOUT   # the vector leg: this code or another's

`model-load` starts one interpreter per load (imports included), alternating the two ways; the others
open STORE read-only (FASTEMBED_CACHE_PATH names the model) and replay the reads of 40 real searches.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client, StdioServerParameters

from bench import perf_spawn
from bench.perf_corpus import queries
from storage import chat_rows
from storage.defaults import DEFAULT_MODEL
from storage.library import Library
from storage.stores import vector_matrix

LOAD = """
import json, sys, time
started = time.perf_counter()
from pathlib import Path
from storage.embedding.embedder import FastEmbedder
if sys.argv[1] == "fastembed":
    FastEmbedder._load_direct = staticmethod(lambda name, cache: None)
embedder = FastEmbedder(sys.argv[2], Path(sys.argv[3]))
seconds = time.perf_counter() - started
embedder.embed_query("nginx reverse proxy for jellyfin")
anon = [int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("RssAnon")][0]
print(json.dumps({"seconds": seconds, "anon_mb": anon, "fastembed": "fastembed" in sys.modules}))
"""


def model_load(pairs: int) -> dict[str, Any]:
    cache = os.environ["FASTEMBED_CACHE_PATH"]
    runs: dict[str, list[dict[str, Any]]] = {"direct": [], "fastembed": []}
    for _ in range(pairs):
        for way in runs:
            out = subprocess.run(
                [sys.executable, "-c", LOAD, way, DEFAULT_MODEL, cache], check=True, capture_output=True, text=True
            )
            runs[way].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        way: {
            "seconds_p50": round(statistics.median(r["seconds"] for r in found), 3),
            "seconds": [round(r["seconds"], 3) for r in found],
            "anon_mb": [round(r["anon_mb"]) for r in found],
            "imported_fastembed": found[0]["fastembed"],
        }
        for way, found in runs.items()
    }


def _open(home: Path) -> Library:
    library = Library.open(home, cache_dir=Path(os.environ["FASTEMBED_CACHE_PATH"]), heal=False)
    library.prepare()
    return library


def _cpu(fn: Callable[[], object], repeats: int = 3) -> tuple[float, float]:
    """Median wall and CPU milliseconds of `fn` over `repeats` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        started, thread = time.perf_counter(), time.thread_time()
        fn()
        wall.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - thread)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def rescore(home: Path) -> dict[str, Any]:
    """The vector leg of 40 real searches (`Snapshot.top`), replayed with the float16 rows read by
    `pread` (as the server does: the file stays out of the resident set) and through the resident map;
    and how many rows each search reads, with the finer bound and without it."""
    library = _open(home)
    library.search("warm up")
    calls: list[tuple[Any, int, Any, list[str]]] = []
    top = vector_matrix.Snapshot.top

    def recording(self: vector_matrix.Snapshot, query: Any, limit: int, filters: Any, exclude: Any, *rest: Any) -> Any:
        calls.append((query, limit, filters, list(exclude)))  # replayed with the default scan threads
        return top(self, query, limit, filters, exclude, *rest)

    vector_matrix.Snapshot.top = recording  # type: ignore[method-assign]  # records, changes nothing
    for query in queries(count=40):
        library.search(query)
    vector_matrix.Snapshot.top = top  # type: ignore[method-assign]
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    through_map = dataclasses.replace(snapshot, float_rows=None)
    through_map.scores(np.zeros(snapshot.vectors.shape[1], np.float32))  # resident, as after many searches
    read, coarse = [], []
    for query, limit, filters, exclude in calls:
        rows, _ = snapshot._rescored(query, limit, snapshot.mask(filters, exclude))
        read.append(len(rows))
        candidates, approx, upper = snapshot._candidates(query, limit, snapshot.mask(filters, exclude))
        if len(candidates) <= limit:
            coarse.append(len(candidates))
            continue
        first = np.sort(candidates[np.argpartition(-approx, limit - 1)[:limit]])
        coarse.append(int(np.count_nonzero(upper >= snapshot.scores(query, first).min())))  # `first` included
    timings: dict[str, list[tuple[float, float]]] = {"pread": [], "map": []}

    def searching(chosen: vector_matrix.Snapshot, call: tuple[Any, int, Any, list[str]]) -> Callable[[], object]:
        return lambda: chosen.top(*call)

    for call in calls:
        for way, chosen in (("pread", snapshot), ("map", through_map)):
            timings[way].append(_cpu(searching(chosen, call)))
    return {
        "rows_read_p50": statistics.median(read),
        "rows_read_max": max(read),
        "rows_without_the_finer_bound_p50": statistics.median(coarse),
        "rows_without_the_finer_bound_max": max(coarse),
        **{f"top_{way}_ms_p50": _medians(found) for way, found in timings.items()},
    }


def against(home: Path, other: Path) -> dict[str, Any]:
    """The vector leg of 40 real searches (limits 600, as the engine asks, and 100), this code's
    `Snapshot.top` against another checkout's (`other`/storage/stores/vector_matrix.py) on the same mapped
    files, call by call in one process (the other's float16 map kept resident, as in its server)."""
    library = _open(home)
    library.search("warm up")
    calls: list[tuple[Any, Any, list[str]]] = []
    top = vector_matrix.Snapshot.top

    def recording(self: vector_matrix.Snapshot, query: Any, limit: int, filters: Any, exclude: Any, *rest: Any) -> Any:
        calls.append((query, filters, list(exclude)))  # replayed with the default scan threads
        return top(self, query, limit, filters, exclude, *rest)

    vector_matrix.Snapshot.top = recording  # type: ignore[method-assign]  # records, changes nothing
    for query in queries(count=40):
        library.search(query)
    vector_matrix.Snapshot.top = top  # type: ignore[method-assign]
    spec = importlib.util.spec_from_file_location("other_vector_matrix", other / "storage" / "vector_matrix.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    ours = library.store.matrix.snapshot()
    assert ours is not None
    theirs = module.Snapshot(**{f.name: getattr(ours, f.name) for f in dataclasses.fields(module.Snapshot)})
    np.ascontiguousarray(np.asarray(ours.vectors)[np.arange(len(ours.vectors))])  # their map, resident
    out: dict[str, Any] = {}
    for limit in (600, 100):
        timings: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
        for i, (query, filters, exclude) in enumerate(calls * 3):
            pair = [("this", ours), ("other", theirs)]
            for way, snapshot in pair if i % 2 else pair[::-1]:
                timings[way].append(_cpu(functools.partial(snapshot.top, query, limit, filters, exclude), repeats=1))
            assert ours.top(query, limit, filters, exclude) == theirs.top(query, limit, filters, exclude)
        out[f"limit_{limit}"] = {f"{way}_ms_p50": _medians(found) for way, found in timings.items()}
    return out


def _medians(found: list[tuple[float, float]]) -> dict[str, float]:
    wall, cpu = statistics.median(t[0] for t in found), statistics.median(t[1] for t in found)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3)}


def release(home: Path) -> dict[str, Any]:
    """The message reads of 40 real searches replayed with the pages dropped after each, and kept."""
    library = _open(home)
    reads: list[tuple[chat_rows.ChatRows, list[int], list[str]]] = []
    original = chat_rows.ChatRows._rows

    def recording(self: chat_rows.ChatRows, rows: Any, columns: list[str]) -> list[dict[str, Any]]:
        rows = list(rows)
        reads.append((self, rows, columns))
        return original(self, rows, columns)

    chat_rows.ChatRows._rows = recording  # type: ignore[method-assign]  # records, changes nothing
    for query in queries(count=40):
        library.search(query)
    chat_rows.ChatRows._rows = original  # type: ignore[method-assign]
    dropping = chat_rows.ChatRows.release
    out: dict[str, Any] = {"reads": len(reads), "rows_per_read_p50": statistics.median(len(r[1]) for r in reads)}
    for way, release_pages in (("dropped", dropping), ("kept", lambda self: None)):
        chat_rows.ChatRows.release = release_pages  # type: ignore[method-assign]
        found = [_cpu(lambda read=read: read[0]._rows(read[1], read[2])) for read in reads]
        out[f"{way}_ms_p50"] = _medians(found)
    chat_rows.ChatRows.release = dropping  # type: ignore[method-assign]
    return out


async def _busy_then_idle(params: Any, wait: float) -> dict[str, Any]:
    async with Client(params, mode="legacy") as client:
        found = queries(count=40)
        for i, query in enumerate(found):
            result = await client.call_tool("conversation_search", {"query": query, "max_results": 10})
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
            if i % 5 == 4:
                await client.call_tool("recent_chats", {"n": 10})
        pid = perf_spawn._children()[-1]
        busy = perf_spawn.memory_of(pid)
        await anyio.sleep(wait)
        return {"after_40_searches": busy, f"idle_{wait:g}s_later": perf_spawn.memory_of(pid)}


def idle_rss(home: Path, baseline: Path | None, wait: float, rounds: int) -> dict[str, Any]:
    """`pastchats serve` over stdio (perf_spawn's way): memory right after 40 searches, and `wait`
    seconds later; with `baseline` (another install's `pastchats`), the same for it, round by round."""
    out: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    for _ in range(rounds):
        for way, command in (("this", Path(sys.executable).parent / "pastchats"), ("baseline", baseline)):
            if command is None:
                continue
            with tempfile.TemporaryDirectory() as user_home:
                env = perf_spawn.minimal_env(home, Path(user_home))
                params = StdioServerParameters(command=str(command), args=["serve"], env=env)
                out[way].append(anyio.run(_busy_then_idle, params, wait))
    return {way: found for way, found in out.items() if found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["model-load", "rescore", "release", "idle-rss", "against"])
    parser.add_argument("--home", type=Path)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--baseline-pastchats", type=Path, help="idle-rss: another install's `pastchats` too")
    parser.add_argument("--wait", type=float, default=3.0, help="idle-rss: seconds idle before the second reading")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--other", type=Path, help="against: another checkout (e.g. an export of main)")
    args = parser.parse_args()
    if args.what == "model-load":
        result = model_load(args.pairs)
    elif args.home is None:
        parser.error("--home STORE is needed")
    elif args.what == "against":
        if args.other is None:
            parser.error("--other CHECKOUT is needed")
        result = against(args.home, args.other)
    elif args.what == "idle-rss":
        result = idle_rss(args.home, args.baseline_pastchats, args.wait, args.rounds)
    else:
        result = rescore(args.home) if args.what == "rescore" else release(args.home)
    load = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({"load_after": load, **result}, indent=2))


if __name__ == "__main__":
    main()
