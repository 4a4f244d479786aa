"""What the MCP layer costs a tool call, with the engine taken out: each call's engine result is
remembered, so what is left is the tool body's formatting and everything MCP does around it.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache nice -n 10 uv run python -m bench.mcp_layer \
        --home STORE [--queries 40] [--rounds 5] [--profile]

For each tool (`conversation_search` over the perf queries, `recent_chats` and `read_chat` pages), per
call, medians over every round:
- `body`: the tool's own function without MCP (formatting and the size budget over the remembered
  engine result);
- `mcp`: the same call through an in-memory MCP client (`mcp.Client(server)`), end to end;
- `mcp_pydantic_schema`: the same again through a second server whose tools publish pydantic's own
  output schemas (`$defs`, `anyOf`) instead of ours, call for call alternating with `mcp`; both also
  as the process's CPU time (`_cpu`: every thread's, so the worker running the body counts; less
  moved by load from other processes than wall-clock time);
- pieces of it, timed by wrappers: the client's check of the structured content against the tool's
  `outputSchema` (`ClientSession.validate_tool_result`), the server's re-validation of it against the
  output model (`FuncMetadata.convert_result`), our `tool_result` (pydantic model → JSON-ready dict),
  and the server's `call_tool` as a whole (argument checks, the body on a worker thread, conversion).
`--profile` adds the top functions of a cProfile over the MCP calls of both servers (cumulative time);
the profiler slows both sides alike, so the ratios stay comparable (profiling only one side made ours
look ~1.8x slower than pydantic's schema; without `--profile` it is ~0.84x).

`--schemas` checks the same results' structured content against each tool's output schema as the
SDK's client does (a compiled jsonschema validator, `iter_errors` and `best_match`), pydantic's own
schema and ours (`tools.outputs`: flat) interleaved result by result, in this thread's CPU time
(load on the other core moves it less than wall-clock time): medians per result and their ratio.

The store is only read. Prints JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema.validators import validator_for
from mcp import Client
from mcp.client.session import ClientSession
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import BaseModel, create_model
from referencing import Registry

from bench.perf_corpus import queries
from server.app import build_server
from server.settings import Settings
from storage.library import Library
from tools import common, conversation_search, read_chat, recent_chats
from tools.outputs import ReadOutput, RecentOutput, SearchOutput

OUTPUTS: dict[str, type[BaseModel]] = {
    "conversation_search": SearchOutput,
    "recent_chats": RecentOutput,
    "read_chat": ReadOutput,
}


def remembered(fn: Callable[..., Any]) -> Callable[..., Any]:
    cache: dict[str, Any] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = repr((args, sorted(kwargs.items())))
        if key not in cache:
            cache[key] = fn(*args, **kwargs)
        return cache[key]

    return wrapper


class Pieces:
    """Wall-clock time of wrapped functions, per call."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.spans: dict[str, tuple[float, float]] = {}  # the last call's start and end, per label
        self.enabled = False

    def record(self, label: str, started: float) -> None:
        if self.enabled:
            ended = time.perf_counter()
            self.times.setdefault(label, []).append(ended - started)
            self.spans[label] = (started, ended)

    def wrap(self, owner: Any, name: str, label: str) -> None:
        raw = owner.__dict__[name]
        pieces = self

        if callable(raw) and getattr(raw, "__code__", None) and raw.__code__.co_flags & 0x80:  # a coroutine function

            @functools.wraps(raw)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await raw(*args, **kwargs)
                finally:
                    pieces.record(label, started)

            setattr(owner, name, awrapper)
            return

        @functools.wraps(raw)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return raw(*args, **kwargs)
            finally:
                pieces.record(label, started)

        setattr(owner, name, wrapper)


def ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(v * 1000 for v in values)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "n": len(ordered),
    }


def pydantic_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The schema pydantic writes for `model` (with `$defs` and `anyOf`), from a copy without our hook."""
    base = next(b for b in model.__mro__[1:] if issubclass(b, BaseModel) and b.__module__ == "storage.results")
    own = [name for name in model.model_fields if name not in base.model_fields]
    extra = {name: (model.model_fields[name].annotation, model.model_fields[name]) for name in own}
    plain: type[BaseModel] = create_model(model.__name__, __base__=base, **extra)  # type: ignore[call-overload]
    return plain.model_json_schema()


def check_cost(schema: dict[str, Any], instance: Any) -> float:
    validator = validator_for(schema)(schema, registry=Registry())
    started = time.thread_time()
    error = jsonschema_exceptions.best_match(validator.iter_errors(instance))
    spent = time.thread_time() - started
    assert error is None, error
    return spent


def schemas(contents: dict[str, list[Any]], rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tool, instances in contents.items():
        ours = OUTPUTS[tool].model_json_schema()
        theirs = pydantic_schema(OUTPUTS[tool])
        times: dict[str, list[float]] = {"pydantic": [], "flat": []}
        for _ in range(rounds):
            for instance in instances:
                times["pydantic"].append(check_cost(theirs, instance))
                times["flat"].append(check_cost(ours, instance))
        summary: dict[str, Any] = {name: ms(values) for name, values in times.items()}
        summary["ratio_p50"] = round(summary["flat"]["p50_ms"] / summary["pydantic"]["p50_ms"], 3)
        summary["schema_chars"] = {"pydantic": len(json.dumps(theirs)), "flat": len(json.dumps(ours))}
        out[tool] = summary
    return out


def run(home: Path, count: int, rounds: int, profile: bool, only_schemas: bool = False) -> dict[str, Any]:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    library = Library.open(home, cache_dir=Path(cache) if cache else None)
    library.search = remembered(library.search)  # type: ignore[method-assign]  # the engine out of the picture
    library.recent = remembered(library.recent)  # type: ignore[method-assign]
    library.read_chat = remembered(library.read_chat)  # type: ignore[method-assign]
    settings = Settings(home=home, sync=False)
    server = build_server(settings, lambda _: library)
    other = build_server(settings, lambda _: library)
    for name, model in OUTPUTS.items():  # before anything lists the tools (the SDK caches the schema then)
        listed = other._tool_manager.get_tool(name)  # type: ignore[attr-defined]  # a bench may reach in
        listed.fn_metadata.output_schema = pydantic_schema(model)
    budget = settings.output_budget_chars
    qs = queries(count=count)
    uris = [hit.uri for hit in library.recent(n=10).chats]
    calls: list[tuple[str, dict[str, Any], Callable[[], object]]] = []
    for q in qs:
        search = functools.partial(conversation_search.search, library, q, budget=budget)
        calls.append(("conversation_search", {"query": q}, search))
    for n in (3, 10, 20):
        calls.append(("recent_chats", {"n": n}, functools.partial(recent_chats.recent, library, n=n, budget=budget)))
    for uri in uris:
        calls.append(("read_chat", {"uri": uri}, functools.partial(read_chat.read, library, uri, budget=budget)))
    if only_schemas:
        contents: dict[str, list[Any]] = {}
        for tool, _, body in calls:
            output, _ = body()  # type: ignore[misc]
            contents.setdefault(tool, []).append(output.model_dump(mode="json"))
        library.close()
        return {"schemas": schemas(contents, rounds)}

    pieces = Pieces()
    pieces.wrap(ClientSession, "validate_tool_result", "client_output_schema_check")
    pieces.wrap(FuncMetadata, "convert_result", "server_output_revalidation")
    pieces.wrap(type(server), "call_tool", "server_call_tool")
    for name in ("conversation_search", "recent_chats", "read_chat"):  # the body on a worker thread, and the hops
        pieces.wrap(sys.modules[f"tools.{name}"], "run_tool", "server_run_tool")
    pieces.wrap(common, "guarded", "server_body_on_worker")
    raw_result = common.tool_result
    timings: dict[str, dict[str, list[float]]] = {}
    profiler = cProfile.Profile() if profile else None

    def timed_result(output: Any, text: str) -> Any:
        started = time.perf_counter()
        try:
            return raw_result(output, text)
        finally:
            if pieces.enabled:
                pieces.times.setdefault("tool_result_model_dump", []).append(time.perf_counter() - started)

    for name in OUTPUTS:
        sys.modules[f"tools.{name}"].tool_result = timed_result  # type: ignore[attr-defined]

    async def session() -> None:
        async with Client(server) as client, Client(other) as other_client:

            async def pydantic_call(tool: str, arguments: dict[str, Any]) -> None:
                if profiler is not None:  # profiled like the other side, or the ratio counts the profiler
                    profiler.enable()
                started, cpu = time.perf_counter(), time.process_time()
                await other_client.call_tool(tool, arguments)
                if profiler is not None:
                    profiler.disable()
                per = timings.setdefault(tool, {})
                per.setdefault("mcp_pydantic_schema", []).append(time.perf_counter() - started)
                per.setdefault("mcp_pydantic_schema_cpu", []).append(time.process_time() - cpu)

            for tool, arguments, body in calls:  # warm every cache (and the engine's remembered results)
                body()
                await client.call_tool(tool, arguments)
                await other_client.call_tool(tool, arguments)
            for round_number in range(rounds):
                for i, (tool, arguments, body) in enumerate(calls):
                    if (i + round_number) % 2:
                        await pydantic_call(tool, arguments)
                    per = timings.setdefault(tool, {})
                    started = time.perf_counter()
                    body()
                    per.setdefault("body", []).append(time.perf_counter() - started)
                    pieces.enabled = True
                    pieces.times = {}
                    if profiler is not None:
                        profiler.enable()
                    started, cpu = time.perf_counter(), time.process_time()
                    result = await client.call_tool(tool, arguments)
                    per.setdefault("mcp", []).append(time.perf_counter() - started)
                    per.setdefault("mcp_cpu", []).append(time.process_time() - cpu)
                    if profiler is not None:
                        profiler.disable()
                    pieces.enabled = False
                    assert not result.is_error, result
                    for label, values in pieces.times.items():
                        per.setdefault(label, []).append(sum(values))
                    hop, ran = pieces.spans["server_run_tool"], pieces.spans["server_body_on_worker"]
                    per.setdefault("hop_to_worker", []).append(ran[0] - hop[0])
                    per.setdefault("hop_back_from_worker", []).append(hop[1] - ran[1])
                    if not (i + round_number) % 2:
                        await pydantic_call(tool, arguments)

    anyio.run(session)
    library.close()
    out: dict[str, Any] = {}
    for tool, per in timings.items():
        summary: dict[str, Any] = {label: ms(values) for label, values in per.items()}
        summary["mcp_minus_body_p50_ms"] = round(summary["mcp"]["p50_ms"] - summary["body"]["p50_ms"], 3)
        for kind in ("", "_cpu"):
            summary[f"ratio_mcp{kind}_vs_pydantic_schema_p50"] = round(
                summary[f"mcp{kind}"]["p50_ms"] / summary[f"mcp_pydantic_schema{kind}"]["p50_ms"], 3
            )
        out[tool] = summary
    if profiler is not None:
        buffer = io.StringIO()
        stats = pstats.Stats(profiler, stream=buffer)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(30)
        out["profile"] = buffer.getvalue()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--schemas", action="store_true", help="only the output-schema check, pydantic's against ours")
    args = parser.parse_args()
    started = os.getloadavg()
    out = run(args.home, args.queries, args.rounds, args.profile, args.schemas)
    out["load"] = [started, os.getloadavg()]
    profile = out.pop("profile", None)
    print(json.dumps(out, indent=1))
    if profile:
        print(profile, file=sys.stderr)


if __name__ == "__main__":
    main()
