"""Where one search's time goes, whether the legs' native code lets the other thread run, and what the
cyclic garbage collector costs a search.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache nice -n 10 uv run python -m bench.search_phases \
        --home STORE [--queries 40] [--only phases,gil,gc]

- phases: wall-clock wrappers around each step of `Library.search` (the query embedding and the vector
  leg run on a worker beside the keyword leg, so the phases overlap), medians over cold searches.
- gil: each native call runs on a thread while this thread counts in a Python loop; the longest gap
  between two counts is how long the call kept the GIL from Python. A pure-Python loop (holds it) and
  SHA-256 over 64 MB (releases it) are the controls.
- threads: `Library.search` under each thread setting, interleaved query by query in this process:
  onnxruntime's pool spinning after a run (its default) or blocking (ours), its intra-op threads, and
  the matrix scan's threads beside the keyword leg (`search.engine.HYBRID_SCAN_THREADS`); then the query
  embedding and the scan (top 600) alone under each. Every setting gives the same vectors and rows.
- vector: the vector leg alone (`LanceStore.vector_search`, as deep as a search reads it: top 300 since the
  seventh session, 600 before), each of its steps timed inside it: the query embedding, the int8 scan,
  the candidates' bounds around it, the float16 rows by `pread` and their scores, the finer bound, the
  best rows, the hits; medians over cold queries.
- timeline: `conversation_search` through an in-memory MCP client, every step stamped with its thread and
  its start and end since the call began (medians over cold searches): which thread waits for what, how
  long from the legs' end to the engine's result, and from the tool's output to the client's reply.
- after: `conversation_search` through an in-memory MCP client, per call the stretch from the vector
  leg's end to the client's reply cut at stamps in call order (the member windows, fusion, the boosts,
  the chats' metadata, messages and matches, the tool's fitting and rendering, the tool's result, MCP
  to the client and the client's check of the result against the tool's output schema): each
  stretch's wall p50 / p95 and, where both stamps are on one thread, its wall minus that thread's CPU
  time (what it waited rather than worked); the server's collector threshold.
- gc: `conversation_search` (the tool without MCP) over the same queries under Python's default
  young-generation threshold (700) and the server's (`server.app.SERVING_GC_THRESHOLD`), each in its
  own child process: collections per generation, their time per search, the longest pause.

The store is only read. Prints JSON.
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.perf_corpus import queries
from storage import lance_store, vector_matrix
from storage.embedder import FastEmbedder
from storage.evidence import TermWeights
from storage.filters import Filters
from storage.keyword_index import KeywordIndex
from storage.library import Library
from storage.query import analyse
from storage.search import engine, fusion, legs

# Each step of a search: methods (class, name) and the search's stages (module, name), as called.
PHASES: list[tuple[Any, str]] = [
    (engine.SearchEngine, "_vector_hits"),
    (lance_store.LanceStore, "vector_search"),
    (KeywordIndex, "doc_freqs"),
    (KeywordIndex, "find_scored"),
    (KeywordIndex, "find_phrases"),
    (KeywordIndex, "read"),
    (TermWeights, "present"),
    (legs, "member_windows"),
    (engine, "rrf"),
    (fusion, "rrf"),  # the windows' own fusion, inside the window boost
    (engine, "window_boost"),
    (engine, "chat_boost"),
    (lance_store.LanceStore, "metas"),
    (lance_store.LanceStore, "message_windows"),
    (lance_store.LanceStore, "message_spans"),
    (engine.SearchEngine, "rank"),
]


def open_library(home: Path) -> Library:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    return Library.open(home, cache_dir=Path(cache) if cache else None)


def cold(library: Library) -> None:
    if isinstance(library.embedder, FastEmbedder):
        library.embedder.clear_query_cache()


# The vector leg's steps (`vector`): methods, then module functions (looked up by name when called).
VECTOR_STEPS: list[tuple[Any, str]] = [
    (engine.SearchEngine, "_vector_hits"),
    (lance_store.LanceStore, "vector_search"),
    (vector_matrix.Snapshot, "top"),
    (vector_matrix.Snapshot, "_int8_scan"),
    (vector_matrix.Snapshot, "_candidates"),
    (vector_matrix.Snapshot, "scores"),
    (vector_matrix.FloatRows, "read"),
    (vector_matrix.Snapshot, "_finer_upper"),
]
VECTOR_FUNCTIONS: list[tuple[Any, str]] = [(vector_matrix, "_best"), (lance_store, "_scored_hits")]


def wrap(
    spent: dict[str, list[float]], methods: list[tuple[Any, str]], functions: Sequence[tuple[Any, str]] = ()
) -> None:
    """Time every call of `methods` (class or module, name) and module `functions` into `spent[name]`."""

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.setdefault(name, []).append(time.perf_counter() - started)

        return wrapper

    for owner, name in methods:  # static and class methods keep their kind
        raw = owner.__dict__[name]
        if isinstance(raw, staticmethod):
            setattr(owner, name, staticmethod(timed(name, raw.__func__)))
        elif isinstance(raw, classmethod):
            setattr(owner, name, classmethod(timed(name, raw.__func__)))
        else:
            setattr(owner, name, timed(name, raw))
    for module, name in functions:
        setattr(module, name, timed(name, getattr(module, name)))


def phases(library: Library, count: int) -> dict[str, Any]:
    spent: dict[str, list[float]] = {}
    wrap(spent, [(type(library.embedder), "embed_query"), *PHASES])
    library.search("warm up", max_results=5)
    per_search: dict[str, list[tuple[float, int]]] = {}
    total = []
    for query in queries(count=count):
        cold(library)
        spent.clear()
        started = time.perf_counter()
        library.search(query, max_results=5)
        total.append(time.perf_counter() - started)
        for name, times in spent.items():
            per_search.setdefault(name, []).append((sum(times), len(times)))
    out: dict[str, Any] = {"search_p50_ms": round(statistics.median(total) * 1000, 2)}
    for name, rows in per_search.items():
        out[name] = {
            "p50_ms": round(statistics.median(t for t, _ in rows) * 1000, 2),
            "calls": statistics.median(n for _, n in rows),
        }
    return out


def vector(library: Library, count: int, reach: int | None = None) -> dict[str, Any]:
    """The vector leg alone, as `SearchEngine.rank` runs it (its threads), each step's time inside it."""
    spent: dict[str, list[float]] = {}
    searcher = library.engine
    threads = engine.HYBRID_SCAN_THREADS
    reach = engine.SEARCH_DEPTH * legs.VECTOR_OVERFETCH if reach is None else reach
    searcher._vector_hits("warm up", reach, Filters(), threads)
    wrap(spent, [(type(library.embedder), "embed_query"), *VECTOR_STEPS], VECTOR_FUNCTIONS)
    per_search: dict[str, list[tuple[float, int]]] = {}
    total, cpu = [], []
    for query in queries(count=count):
        cold(library)
        spent.clear()
        started, cpu_started = time.perf_counter(), time.process_time()
        searcher._vector_hits(query, reach, Filters(), threads)
        total.append(time.perf_counter() - started)
        time.sleep(0.05)  # as between a client's searches: threads the leg left spinning burn CPU here
        cpu.append(time.process_time() - cpu_started)
        for name, times in spent.items():
            per_search.setdefault(name, []).append((sum(times), len(times)))
    out: dict[str, Any] = {"leg_p50_ms": round(statistics.median(total) * 1000, 2), "scan_threads": threads}
    out["reach"] = reach
    # CPU time of the whole process (every thread) from the leg's start to 50 ms after its end
    out["cpu_per_leg_p50_ms"] = round(statistics.median(cpu) * 1000, 2)
    for name, rows in per_search.items():
        out[name] = {
            "p50_ms": round(statistics.median(t for t, _ in rows) * 1000, 2),
            "calls": statistics.median(n for _, n in rows),
        }
    return out


# What the timeline stamps, in call order (owner, attribute, label): the legs, the engine after them,
# the tool, and the MCP layer's side of the result.
TIMELINE: list[tuple[Any, str, str]] = [
    (engine.SearchEngine, "rank", "engine: rank (both legs, fusion)"),
    (engine.SearchEngine, "_vector_hits", "vector worker: query embedding and vector leg"),
    (lance_store.LanceStore, "vector_search", "vector worker: vector leg (scan, rescoring, hits)"),
    (KeywordIndex, "doc_freqs", "keyword: doc freqs"),
    (KeywordIndex, "find_scored", "keyword: Tantivy searches"),
    (KeywordIndex, "find_phrases", "keyword: phrase search"),
    (KeywordIndex, "read", "keyword: stored documents read"),
    # coverage is `present` and `share` where `present` exists (messages' stems, also for their windows)
    (TermWeights, "present", "keyword: coverage checks"),
    (legs, "member_windows", "keyword: windows from the message hits"),
    (engine, "rrf", "engine: RRF"),
    (engine, "window_boost", "engine: window boost"),
    (engine, "chat_boost", "engine: chat boost"),
    (lance_store.LanceStore, "metas", "engine: chat metas"),
    (lance_store.LanceStore, "message_windows", "engine: message windows read"),
    (lance_store.LanceStore, "message_spans", "engine: message spans"),
    (engine.SearchEngine, "search", "engine: search (whole)"),
]


def timeline(library: Library, count: int) -> dict[str, Any]:
    """Each step's start and end (ms since the MCP call began) and thread, medians over cold searches."""
    import anyio
    from mcp import Client

    from server.app import build_server
    from server.settings import Settings
    from tools import common, conversation_search, search_budget

    events: list[tuple[str, str, float, float]] = []

    def stamped(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                events.append((label, threading.current_thread().name, started, time.perf_counter()))

        return wrapper

    def patch(owner: Any, name: str, label: str) -> None:
        raw = owner.__dict__.get(name)  # None in a code version without it (the timeline runs on either)
        if raw is None:
            return
        if isinstance(raw, staticmethod):
            setattr(owner, name, staticmethod(stamped(label, raw.__func__)))
        elif isinstance(raw, classmethod):
            setattr(owner, name, classmethod(stamped(label, raw.__func__)))
        else:
            setattr(owner, name, stamped(label, raw))

    for owner, name, label in TIMELINE:
        patch(owner, name, label)
    # The tool's own steps: its body (in `tools.topic_search` since the sixth session, in the tool's module
    # before), the budget fitting, rendering, and the CallToolResult it builds.
    try:
        body: Any = importlib.import_module("tools.topic_search")
    except ImportError:
        body = conversation_search
    body.search = stamped("tool: search (whole, without MCP)", body.search)
    body.fit_search = stamped("tool: fit_search (fitting + rendering)", search_budget.fit_search)
    search_budget.chat_block = stamped("tool: chat_block renders", search_budget.chat_block)  # type: ignore[assignment]
    common.tool_result = stamped("tool: tool_result (model_dump)", common.tool_result)  # type: ignore[assignment]
    conversation_search.tool_result = common.tool_result  # type: ignore[assignment]
    server = build_server(Settings(home=library.home, sync=False), lambda _: library)
    rows: dict[str, list[tuple[float, float, float, int, str]]] = {}
    totals: list[float] = []

    async def session() -> None:
        async with Client(server) as client:
            await client.call_tool("conversation_search", {"query": "warm up"})
            for query in queries(count=count):
                cold(library)
                events.clear()
                started = time.perf_counter()
                await client.call_tool("conversation_search", {"query": query})
                ended = time.perf_counter()
                totals.append(ended - started)
                seen: dict[str, list[tuple[str, float, float]]] = {}
                for label, thread, t0, t1 in events:
                    seen.setdefault(label, []).append((thread, t0, t1))
                for label, spans in seen.items():
                    first = min(t0 for _, t0, _ in spans) - started
                    last = max(t1 for _, _, t1 in spans) - started
                    busy = sum(t1 - t0 for _, t0, t1 in spans)
                    thread = spans[0][0].split("_")[0]
                    rows.setdefault(label, []).append((first, last, busy, len(spans), thread))
                rows.setdefault("mcp: reply at client", []).append((ended - started, ended - started, 0.0, 1, "main"))

    anyio.run(session)

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 2)

    out: dict[str, Any] = {"mcp_call_p50_ms": ms(totals), "steps": {}}
    for label, values in sorted(rows.items(), key=lambda item: statistics.median(v[0] for v in item[1])):
        out["steps"][label] = {
            "start_ms": ms([v[0] for v in values]),
            "end_ms": ms([v[1] for v in values]),
            "busy_ms": ms([v[2] for v in values]),
            "calls": statistics.median(v[3] for v in values),
            "thread": values[0][4],
        }

    def gap(later: str, at: int, earlier: str, at_earlier: int) -> float:
        return ms([b[at] - a[at_earlier] for a, b in zip(rows[earlier], rows[later], strict=True)])

    vector = "vector worker: vector leg (scan, rescoring, hits)"
    keyword = "keyword: stored documents read"
    legs = list(zip(rows[vector], rows[keyword], rows["keyword: coverage checks"], strict=True))
    legs_end = [max(v[1], k[1], c[1]) for v, k, c in legs]
    out["gaps_ms"] = {
        "call start -> tool body starts": ms([v[0] for v in rows["tool: search (whole, without MCP)"]]),
        "legs' end -> rank returns": ms(
            [r[1] - e for r, e in zip(rows["engine: rank (both legs, fusion)"], legs_end, strict=True)]
        ),
        "vector leg end - keyword side end (>0: the keyword thread waits)": ms(
            [v[1] - max(k[1], c[1]) for v, k, c in legs]
        ),
        "rank returns -> engine result": gap("engine: search (whole)", 1, "engine: rank (both legs, fusion)", 1),
        "engine result -> tool body returns": gap("tool: search (whole, without MCP)", 1, "engine: search (whole)", 1),
        "tool body returns -> tool_result built": gap(
            "tool: tool_result (model_dump)", 1, "tool: search (whole, without MCP)", 1
        ),
        "tool_result built -> reply at client": gap("mcp: reply at client", 1, "tool: tool_result (model_dump)", 1),
    }
    return out


def longest_stall(call: Callable[[], object]) -> tuple[float, float]:
    """(the call's duration, the longest this thread went without running), in ms."""
    done = threading.Event()
    took = [0.0]

    def worker() -> None:
        time.sleep(0.02)
        started = time.perf_counter()
        call()
        took[0] = time.perf_counter() - started
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    last = time.perf_counter()
    longest = 0.0
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    thread.join()
    return took[0] * 1000, longest * 1000


def gil(library: Library, count: int) -> dict[str, Any]:
    import tantivy

    keywords = library.keywords
    analysed = [analyse(q) for q in queries(count=count)]
    terms = sorted({t for a in analysed for t in a.terms})
    every = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(keywords.schema, "text", t)) for t in terms]
    )
    searcher = (getattr(keywords, "reader", None) or keywords._searcher)()  # `_searcher` in older code
    blob = os.urandom(64 << 20)
    embedder = library.embedder
    assert isinstance(embedder, FastEmbedder), "the gil probe needs the model (FASTEMBED_CACHE_PATH)"
    vector = embedder.embed_query("warm up")
    long_query = " ".join(["terraform state lock payment-service dns resolver kubernetes ingress"] * 30)

    def embed() -> None:
        embedder.clear_query_cache()
        embedder.embed_query(long_query)

    calls: dict[str, Callable[[], object]] = {
        "control: pure Python (holds the GIL)": lambda: sum(range(3_000_000)),
        "control: SHA-256 of 64 MB (releases it)": lambda: hashlib.sha256(blob).digest(),
        "Tantivy search, every query term, top 5,000": lambda: searcher.search(every, 5000),
        "vector leg, top 300": lambda: library.store.vector_search(vector, 300, Filters()),
        "query embedding, a 300-word query": embed,
    }
    out: dict[str, Any] = {}
    for name, call in calls.items():
        call()
        runs = [longest_stall(call) for _ in range(5)]
        out[name] = {
            "call_ms": [round(t, 1) for t, _ in runs],
            "longest_stall_ms": [round(s, 1) for _, s in runs],
        }
    return out


def session(model: Any, spinning: bool, intra_op: int) -> Any:
    """The model's onnxruntime session again, with spinning and intra-op threads as given (0: default)."""
    import onnxruntime as ort

    current = model._session
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = current.get_session_options().enable_cpu_mem_arena
    options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.intra_op_num_threads = intra_op
    return ort.InferenceSession(current._model_path, sess_options=options, providers=["CPUExecutionProvider"])


def threads(library: Library, count: int) -> dict[str, Any]:
    model = getattr(library.embedder, "_model", None)
    assert hasattr(model, "_session"), "the threads part needs the model loaded directly (storage.onnx_text)"
    sessions = {
        "spinning, default threads": session(model, True, 0),
        "blocking, default threads": session(model, False, 0),
        "blocking, 1 thread": session(model, False, 1),
    }
    settings = [(name, scan) for name in sessions for scan in (1, 2)]
    shipped = (model._session, engine.HYBRID_SCAN_THREADS)
    spent: dict[str, list[float]] = {}
    alone: dict[str, list[float]] = {}
    snapshot = library.store.matrix.snapshot()
    library.search("warm up", max_results=5)
    try:
        for query in queries(count=count):
            for name, scan in settings:
                model._session, engine.HYBRID_SCAN_THREADS = sessions[name], scan
                cold(library)
                started = time.perf_counter()
                library.search(query, max_results=5)
                spent.setdefault(f"onnxruntime {name}, scan {scan}", []).append(time.perf_counter() - started)
            for name, chosen in sessions.items():
                model._session = chosen
                cold(library)
                started = time.perf_counter()
                vector = library.embedder.embed_query(query)
                alone.setdefault(f"query embedding, {name}", []).append(time.perf_counter() - started)
            for scan in (1, 2):
                if snapshot is not None:
                    started = time.perf_counter()
                    snapshot.top(vector, 600, Filters(), [], scan)
                    alone.setdefault(f"scan top 600, {scan} thread(s)", []).append(time.perf_counter() - started)
    finally:
        model._session, engine.HYBRID_SCAN_THREADS = shipped
    base = spent["onnxruntime spinning, default threads, scan 2"]
    # median_ratio: of each query's time to its time under onnxruntime's defaults and a two-thread scan
    out: dict[str, Any] = {"search": {}, "alone": {}}
    for label, times in spent.items():
        ordered = sorted(times)
        out["search"][label] = {
            "p50_ms": round(statistics.median(times) * 1000, 2),
            "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 2),
            "median_ratio": round(statistics.median(t / b for t, b in zip(times, base, strict=True)), 3),
        }
    for label, times in alone.items():
        out["alone"][label] = {"p50_ms": round(statistics.median(times) * 1000, 2)}
    return out


# The stamps `after` cuts a call at (owner, attribute, label): entry `label>` and return `<label`.
AFTER_STAMPS: list[tuple[Any, str, str]] = [
    (lance_store.LanceStore, "vector_search", "vector leg"),
    (engine, "member_window_leg", "member windows"),
    (engine, "rrf", "RRF"),
    (engine.SearchEngine, "rank", "rank"),
    (lance_store.LanceStore, "metas", "metas"),
    (engine.SearchEngine, "search", "engine"),
]


def after_legs(library: Library, count: int) -> dict[str, Any]:
    """From the vector leg's end to the client's reply, stretch by stretch, per cold call."""
    import anyio
    from mcp import Client
    from mcp.client.session import ClientSession

    from server.app import SERVING_GC_THRESHOLD, build_server
    from server.settings import Settings
    from tools import common, conversation_search, topic_search

    events: list[tuple[str, float, float, int]] = []  # (stamp, wall, this thread's CPU, thread)

    def stamp(label: str) -> None:
        events.append((label, time.perf_counter(), time.thread_time(), threading.get_ident()))

    def stamped(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stamp(f"{label}>")
            try:
                return fn(*args, **kwargs)
            finally:
                stamp(f"<{label}")

        return wrapper

    def astamped(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            stamp(f"{label}>")
            try:
                return await fn(*args, **kwargs)
            finally:
                stamp(f"<{label}")

        return wrapper

    restore: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, wrapped: Any) -> None:
        restore.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, wrapped)

    for owner, name, label in AFTER_STAMPS:
        raw = owner.__dict__[name]
        if isinstance(raw, staticmethod | classmethod):
            patch(owner, name, type(raw)(stamped(label, raw.__func__)))
        else:
            patch(owner, name, stamped(label, raw))
    patch(topic_search, "search", stamped("tool", topic_search.search))
    patch(conversation_search, "tool_result", stamped("tool result", common.tool_result))
    # the client's check of the structured content against the tool's output schema
    patch(ClientSession, "validate_tool_result", astamped("client check", ClientSession.validate_tool_result))
    server = build_server(Settings(home=library.home, sync=False), lambda _: library)
    stretches: dict[str, list[float]] = {}
    waits: dict[str, list[float]] = {}
    totals: dict[str, list[float]] = {"call": [], "vector leg end -> reply": []}
    young, *older = gc.get_threshold()
    gc.set_threshold(SERVING_GC_THRESHOLD, *older)

    async def session() -> None:
        async with Client(server) as client:
            await client.call_tool("conversation_search", {"query": "warm up"})
            for query in queries(count=count):
                cold(library)
                events.clear()
                started = time.perf_counter()
                result = await client.call_tool("conversation_search", {"query": query})
                stamp("reply")
                assert not result.is_error, result
                calls = events[:]
                ends = [i for i, event in enumerate(calls) if event[0] == "<vector leg"]
                if not ends:  # a keyword-only search
                    continue
                totals["call"].append(calls[-1][1] - started)
                totals["vector leg end -> reply"].append(calls[-1][1] - calls[ends[0]][1])
                for (a, wall_a, cpu_a, thread_a), (b, wall_b, cpu_b, thread_b) in zip(
                    calls[ends[0] :], calls[ends[0] + 1 :], strict=False
                ):
                    stretches.setdefault(f"{a} -> {b}", []).append(wall_b - wall_a)
                    if thread_a == thread_b and b != "reply":
                        waits.setdefault(f"{a} -> {b}", []).append((wall_b - wall_a) - (cpu_b - cpu_a))

    try:
        anyio.run(session)
    finally:
        gc.set_threshold(young, *older)
        for owner, name, raw in reversed(restore):
            setattr(owner, name, raw)

    def summary(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}

    return {
        "totals": {name: summary(values) for name, values in totals.items()},
        "stretches": {
            name: {**summary(values), "n": len(values), **({"waited": summary(waits[name])} if name in waits else {})}
            for name, values in stretches.items()
        },
    }


def collector(library: Library, count: int, threshold: int) -> dict[str, Any]:
    """Run in a child process: the collector's work over `count` tool searches at `threshold`."""
    from tools import conversation_search

    conversation_search.search(library, "warm up")
    gc.set_threshold(threshold, *gc.get_threshold()[1:])
    pauses: dict[int, list[float]] = {}
    started = [0.0]

    def track(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.setdefault(info["generation"], []).append(time.perf_counter() - started[0])

    gc.callbacks.append(track)
    total = []
    for query in queries(count=count):
        cold(library)
        begun = time.perf_counter()
        conversation_search.search(library, query)
        total.append(time.perf_counter() - begun)
    gc.callbacks.remove(track)
    spent = sum(sum(p) for p in pauses.values())
    return {
        "threshold": threshold,
        "collections": {str(g): len(p) for g, p in sorted(pauses.items())},
        "gc_ms_per_search": round(spent / count * 1000, 2),
        "longest_pause_ms": round(max((max(p) for p in pauses.values()), default=0.0) * 1000, 1),
        "share_of_search_time": round(spent / sum(total), 3),
        "search_p50_ms": round(statistics.median(total) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=40)
    parts = "phases,timeline,after,gil,threads,vector,gc"
    parser.add_argument("--only", default="phases,gil,gc", help=f"comma list: {parts}")
    parser.add_argument("--gc-threshold", type=int, help=argparse.SUPPRESS)  # the child process's run
    args = parser.parse_args()
    library = open_library(args.home)
    if args.gc_threshold is not None:
        print(json.dumps(collector(library, args.queries, args.gc_threshold)))
        return
    wanted = set(args.only.split(","))
    out: dict[str, Any] = {"load_average_start": os.getloadavg()}
    if "gil" in wanted:
        out["gil"] = gil(library, args.queries)
    if "threads" in wanted:
        out["threads"] = threads(library, args.queries)
    if "phases" in wanted:
        out["phases"] = phases(library, args.queries)
    if "timeline" in wanted:
        out["timeline"] = timeline(library, args.queries)
    if "after" in wanted:
        out["after"] = after_legs(library, args.queries)
    if "vector" in wanted:  # after phases: its wrappers stay on the methods
        out["vector"] = vector(library, args.queries)
    if "gc" in wanted:
        from server.app import SERVING_GC_THRESHOLD

        out["gc"] = []
        for threshold in (gc.get_threshold()[0], SERVING_GC_THRESHOLD):
            child = [sys.executable, "-m", "bench.search_phases", "--home", str(args.home)]
            child += ["--queries", str(args.queries), "--gc-threshold", str(threshold)]
            ran = subprocess.run(child, capture_output=True, text=True, check=True)
            out["gc"].append(json.loads(ran.stdout.strip().splitlines()[-1]))
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
