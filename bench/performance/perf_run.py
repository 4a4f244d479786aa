"""`python -m bench.performance.perf run`: every measurement, each with a baseline taken in the same run.

- search: `conversation_search` through a real in-memory MCP client and `Library.search` (the
  engine), plain and filtered; the vector leg alone; baseline: a NumPy exact top-100 scan over the
  same vectors held as float32 in RAM, and the Tantivy leg alone. Operations are interleaved query by
  query, so load drift on this shared machine hits them alike.
- recent/read/stats: `recent_chats` and `read_chat` through MCP and the library, `Library.stats`.
- cli: `pastchats stats`, `recent` and `read` as a shell runs them (one process each, on the catalog);
  baseline: a bare interpreter start.
- startup: spawn → `initialize` and spawn → first search result of `pastchats serve` over stdio;
  baselines: a minimal SDK server's spawn → initialize, and a bare interpreter start (and with
  `--baseline-pastchats`, another install's `pastchats serve`, spawn for spawn).
- rss: the serving process's memory after 40 searches, with its largest mappings; baseline: the
  minimal SDK server (and the other install's server).
- disk: the store's bytes on disk against the live data of the tables' current versions.
- import: `bench.performance.perf build --vectors model` in a child process (msgs/s and its peak RSS); baseline:
  the bare model embedding the same messages' texts once each.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client

from bench.corpus.synthetic import CorpusWriter, queries
from bench.performance import perf_spawn
from server.app import build_server
from server.settings import Settings
from storage.embedding.embedder import FastEmbedder
from storage.library import Library
from storage.query.analysis import analyse
from storage.query.filters import Filters
from tools import conversation_search


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2), "n": len(ms)}


def timed(fn: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - started


def open_library(home: Path) -> Library:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    return Library.open(home, cache_dir=Path(cache) if cache else None)


def all_vectors(library: Library) -> np.ndarray[Any, np.dtype[np.float32]]:
    table = library.store.chunks.search().select(["vector"]).limit(None).to_arrow()
    flat = table.column("vector").combine_chunks().flatten().to_numpy()
    return np.ascontiguousarray(flat.reshape(-1, library.store.dim), dtype=np.float32)


def measure_search(library: Library, repeats: int) -> dict[str, Any]:
    qs = queries(count=repeats)
    server = build_server(Settings(home=library.home, sync=False), lambda _: library)
    matrix = all_vectors(library)
    embedder = library.embedder
    assert embedder is not None
    some_chat = library.recent(n=1).chats[0]
    filters = Filters(project="homelab", after=datetime(2023, 6, 1, tzinfo=UTC))
    times: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)

    def cold() -> None:  # every timed search embeds its query: the query cache would hide the model
        if isinstance(embedder, FastEmbedder):
            embedder.clear_query_cache()

    def exact_scan(vector: np.ndarray[Any, np.dtype[np.float32]]) -> None:
        scores = matrix @ vector
        top = np.argpartition(-scores, 100)[:100]
        top[np.argsort(-scores[top])]

    async def session() -> None:
        async with Client(server) as client:
            await client.call_tool("conversation_search", {"query": "warm up"})
            library.search("warm up")
            for i, query in enumerate(qs):
                vector = embedder.embed_query(query)
                add("baseline_numpy_exact_scan", timed(exact_scan, vector))
                add("vector_leg", timed(library.store.vector_search, vector, 100, Filters()))
                add("baseline_lancedb_flat_leg", timed(library.store._lance_vector_search, vector, 100, Filters()))
                add("vector_leg_filtered", timed(library.store.vector_search, vector, 100, filters))
                add("keyword_leg", timed(library.keywords.search, analyse(query), 100, Filters()))
                cold()
                add("query_embedding", timed(embedder.embed_query, query))
                cold()
                add("engine_search", timed(library.search, query, max_results=5))
                cold()
                add(
                    "engine_search_filtered",
                    timed(library.search, query, project="homelab", after=filters.after),
                )
                cold()
                add("tool_search_no_mcp", timed(conversation_search.search, library, query))
                cold()
                started = time.perf_counter()
                await client.call_tool("conversation_search", {"query": query})
                add("mcp_conversation_search", time.perf_counter() - started)
                started = time.perf_counter()  # the same query again: its vector is remembered
                await client.call_tool("conversation_search", {"query": query})
                add("mcp_conversation_search_repeated_query", time.perf_counter() - started)
                cold()
                started = time.perf_counter()
                await client.call_tool(
                    "conversation_search", {"query": query, "project": "homelab", "after": "2023-06-01"}
                )
                add("mcp_conversation_search_filtered", time.perf_counter() - started)
                if i % 2 == 0:
                    add("engine_recent", timed(library.recent, n=5))
                    add("engine_read", timed(library.read_chat, some_chat.uri, limit=20))
                    add("engine_stats", timed(library.stats))
                    started = time.perf_counter()
                    await client.call_tool("recent_chats", {"n": 5})
                    add("mcp_recent_chats", time.perf_counter() - started)
                    started = time.perf_counter()
                    await client.call_tool("read_chat", {"uri": some_chat.uri, "limit": 20})
                    add("mcp_read_chat", time.perf_counter() - started)

    anyio.run(session)
    out: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    base = out["baseline_numpy_exact_scan"]["p50_ms"]
    out["ratios_p50"] = {
        "vector_leg / numpy_exact_scan": round(out["vector_leg"]["p50_ms"] / base, 2),
        "vector_leg / lancedb_flat_leg": round(
            out["vector_leg"]["p50_ms"] / out["baseline_lancedb_flat_leg"]["p50_ms"], 2
        ),
        "mcp_search / numpy_exact_scan": round(out["mcp_conversation_search"]["p50_ms"] / base, 2),
        "mcp_search / keyword_leg": round(out["mcp_conversation_search"]["p50_ms"] / out["keyword_leg"]["p50_ms"], 2),
    }
    out["passages"] = int(matrix.shape[0])
    return out


def measure_startup(
    home: Path, spawns: int, baseline: Path | None = None, compare_home: Path | None = None
) -> dict[str, Any]:
    """`compare_home`: another store served by this install, spawn for spawn (what size costs)."""
    qs = queries(count=spawns)
    init, first, minimal, bare, other_init, other_first = [], [], [], [], [], []
    home_init, home_first = [], []
    for i in range(spawns):
        bare.append(perf_spawn.bare_interpreter())
        minimal.append(perf_spawn.spawn_minimal())
        initialized, result, _ = perf_spawn.spawn_pastchats(home, [qs[i]])
        init.append(initialized)
        first.append(result or 0.0)
        if baseline is not None:
            initialized, result, _ = perf_spawn.spawn_pastchats(home, [qs[i]], command=baseline)
            other_init.append(initialized)
            other_first.append(result or 0.0)
        if compare_home is not None:
            initialized, result, _ = perf_spawn.spawn_pastchats(compare_home, [qs[i]])
            home_init.append(initialized)
            home_first.append(result or 0.0)
    out: dict[str, Any] = {
        "spawn_to_initialize": summary(init),
        "spawn_to_first_result": summary(first),
        "baseline_minimal_sdk_server_initialize": summary(minimal),
        "baseline_bare_interpreter": summary(bare),
    }
    for name, other, inits, firsts in (
        ("baseline_pastchats", baseline, other_init, other_first),
        ("compare_home", compare_home, home_init, home_first),
    ):
        if other is not None:  # the other program or store, spawned alternately with this one
            out[name] = str(other)
            out[f"{name}_initialize"] = summary(inits)
            out[f"{name}_first_result"] = summary(firsts)
            out[f"ratio_first_result_vs_{name}_p50"] = round(
                out["spawn_to_first_result"]["p50_ms"] / out[f"{name}_first_result"]["p50_ms"], 2
            )
    out["ratio_initialize_vs_minimal_p50"] = round(
        out["spawn_to_initialize"]["p50_ms"] / out["baseline_minimal_sdk_server_initialize"]["p50_ms"], 2
    )
    return out


def measure_cli(home: Path, spawns: int) -> dict[str, Any]:
    """`pastchats stats`, `recent` and `read` from a shell, spawn by spawn beside a bare interpreter."""
    command = [str(Path(sys.executable).with_name("pastchats")), "--home", str(home)]
    listed = subprocess.run([*command, "recent", "--json"], check=True, capture_output=True, text=True).stdout
    uri = json.loads(listed)["chats"][0]["uri"]
    runs = {"stats": ["stats"], "recent": ["recent", "-n", "5"], "read": ["read", uri, "--limit", "20"]}
    times: dict[str, list[float]] = {name: [] for name in [*runs, "baseline_bare_interpreter"]}
    for _ in range(spawns):
        times["baseline_bare_interpreter"].append(perf_spawn.bare_interpreter())
        for name, args in runs.items():
            started = time.perf_counter()
            subprocess.run([*command, *args], check=True, capture_output=True)
            times[name].append(time.perf_counter() - started)
    return {f"cli_{name}" if name in runs else name: summary(values) for name, values in times.items()}


def measure_rss(home: Path, baseline: Path | None = None, compare_home: Path | None = None) -> dict[str, Any]:
    _, _, memory = perf_spawn.spawn_pastchats(home, queries(count=40), rss_after=40)
    out = {"serve_after_40_searches_mb": memory, "baseline_minimal_sdk_server_mb": perf_spawn.minimal_memory()}
    if baseline is not None:
        _, _, other = perf_spawn.spawn_pastchats(home, queries(count=40), rss_after=40, command=baseline)
        out["baseline_pastchats_after_40_searches_mb"] = other
    if compare_home is not None:
        _, _, other = perf_spawn.spawn_pastchats(compare_home, queries(count=40), rss_after=40)
        out["compare_home"] = str(compare_home)
        out["compare_home_after_40_searches_mb"] = other
    return out


def measure_disk(library: Library) -> dict[str, Any]:
    tables = {name: getattr(library.store, name) for name in ("conversations", "messages", "chunks")}
    live = sum(int(t.stats()["total_bytes"]) for t in tables.values())
    lance_disk = library.store.disk_bytes()
    total = sum(f.stat().st_size for f in library.home.rglob("*") if f.is_file())
    return {
        "lancedb_disk_mb": round(lance_disk / 1e6, 1),
        "live_data_mb": round(live / 1e6, 1),
        "ratio_lancedb_disk_vs_live": round(lance_disk / live, 2),
        "whole_home_mb": round(total / 1e6, 1),
        "versions": {name: len(t.list_versions()) for name, t in tables.items()},
    }


def measure_import(messages: int, deferred: bool = True) -> dict[str, Any]:
    """`deferred`: `pastchats import`'s path (stored keyword-searchable first, then embedded in batches)."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "bench.performance.perf", "build", "--vectors", "model"]
        command += ["--messages", str(messages), "--home", str(Path(tmp) / "store")]
        command += ["--deferred"] if deferred else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    built = json.loads(output)
    peak = after.ru_maxrss / 1024
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    model = FastEmbedder(cache_dir=Path(cache) if cache else None)
    texts = [m.text for c in CorpusWriter(messages) for m in c.messages]
    started, cpu_started = time.perf_counter(), time.process_time()
    model.embed_documents(texts)
    bare = time.perf_counter() - started
    bare_cpu = time.process_time() - cpu_started
    return {
        "messages": messages,
        "import_msgs_per_s": round(messages / seconds, 1),
        "import_seconds_incl_start": round(seconds, 1),
        "import_cpu_seconds": round(cpu, 1),  # the import's process, user and kernel
        "import_peak_rss_mb": round(peak),
        "deferred": deferred,
        "keyword_searchable_seconds": built["keyword_searchable_seconds"],
        "import_seconds_without_start": built["import_seconds"],  # no interpreter start, no model load
        "texts_embedded": built["texts_embedded"],
        "model_texts": built.get("model_texts"),  # what the model ran on (derived window vectors are not)
        "baseline_bare_model_msgs_per_s": round(messages / bare, 1),
        "ratio_import_vs_bare_model": round(bare / seconds, 2),
        "baseline_bare_model_cpu_seconds": round(bare_cpu, 1),
    }


def run(
    home: Path,
    *,
    repeats: int,
    spawns: int,
    only: set[str],
    import_messages: int,
    import_deferred: bool = True,
    baseline_pastchats: Path | None = None,
    compare_home: Path | None = None,
) -> dict[str, Any]:
    wanted = only or {"search", "startup", "rss", "disk", "import"}
    results: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "home": str(home),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    }
    if "search" in wanted or "disk" in wanted:
        library = open_library(home)
        if "disk" in wanted:
            results["disk"] = measure_disk(library)
        if "search" in wanted:
            results["search"] = measure_search(library, repeats)
        library.close()
    if "startup" in wanted:
        results["startup"] = measure_startup(home, spawns, baseline_pastchats, compare_home)
    if "rss" in wanted:
        results["rss"] = measure_rss(home, baseline_pastchats, compare_home)
    if "cli" in wanted:
        results["cli"] = measure_cli(home, spawns)
    if "import" in wanted:
        results["import"] = measure_import(import_messages, import_deferred)
    results["load_after"] = os.getloadavg()
    return results
