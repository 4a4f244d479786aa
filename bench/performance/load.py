"""Load: many concurrent MCP clients over streamable HTTP while an import writes to the same store.

    python -m bench.performance.load --store STORE [--clients 32] [--seconds 60]
    python -m bench.performance.load --build 2000 [--clients 4] [--seconds 3]

Loopback only and bounded: `pastchats serve --transport streamable-http` runs on a free 127.0.0.1
port with a minimal environment (HOME, PATH, PASTCHATS_HOME, FASTEMBED_CACHE_PATH); every client
opens one session and calls conversation_search (varied queries), recent_chats and read_chat in a
realistic mix until the time is up. Meanwhile a second process imports a plain JSONL file of a few
hundred chats into the same store. `--store` is copied to a temporary directory first (the import
writes). The import uses the perf builder's hash vectors (the store claims the real model's name,
see bench/performance/perf_build.py) so it does not compete with the server for the model; the server embeds
queries with the real model. Every error counts: transport errors, is_error results, non-200s.
The server and the import are always stopped, and the result is written to bench/results/.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.corpus.synthetic import CorpusWriter, queries

RESULTS = Path(__file__).resolve().parents[1] / "results"
URI = re.compile(r"uri='([^']+)'")
IMPORT_CHATS = 300


def loopback_only(host: str) -> str:
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise SystemExit(f"bench.performance.load runs on loopback only; got --host {host}. Use 127.0.0.1.")


def describe(error: BaseException) -> str:
    """The leaf exceptions of a group: 'unhandled errors in a TaskGroup' alone says nothing."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def minimal_env(home: Path, user_home: Path) -> dict[str, str]:
    env = {"HOME": str(user_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PASTCHATS_HOME": str(home)}
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    if cache:
        env["FASTEMBED_CACHE_PATH"] = cache
    return env


def write_import_file(path: Path, chats: int = IMPORT_CHATS, seed: int = 31) -> int:
    """Plain JSONL chats under their own ids, so the import adds new chats rather than touching old ones."""
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for conversation in CorpusWriter(chats * 60, seed):
            record = conversation.model_dump(mode="json", exclude={"source", "url"})
            record["id"] = f"load-{written:05d}"
            out.write(json.dumps(record) + "\n")
            written += 1
            if written == chats:
                break
    return written


def start_import(home: Path, source: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "bench.performance.load", "--import-child", str(source), "--home", str(home)]
    cwd = Path(__file__).resolve().parents[2]
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def import_child(home: Path, source: Path) -> None:
    """The product's import path (`import_source`) with hash vectors: the store claims the model."""
    from bench.performance.perf_build import ClaimingHashEmbedder
    from server.services.importing import import_source
    from storage.library import Library

    started = time.perf_counter()
    library = Library.open(home, embedder=ClaimingHashEmbedder())
    try:
        summary = import_source(library, source, "plain", False)
    finally:
        library.close()
    seconds = round(time.perf_counter() - started, 1)
    print(json.dumps({"seconds": seconds, "new": summary.conversations_new, "messages": summary.messages}))


def import_report(output: str) -> dict[str, Any]:
    """The child's last line is its JSON summary; anything else it said is kept for the reader."""
    lines = output.strip().splitlines()
    try:
        report: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"output": output[-500:]}
    return report


def wait_listening(host: str, port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"pastchats serve exited early with status {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"pastchats serve did not listen on {host}:{port} within {timeout:.0f} s")


def stop(process: subprocess.Popen[Any] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Tally:
    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {"conversation_search": [], "recent_chats": [], "read_chat": []}
        self.errors: list[str] = []


async def one_client(url: str, number: int, until: float, tally: Tally, words: list[str]) -> None:
    rng = random.Random(number)
    uris: list[str] = []
    calls = 0
    try:
        async with Client(url) as client:
            while time.monotonic() < until:
                roll = rng.random()
                args: dict[str, Any]
                if roll >= 0.8 and uris:
                    name, args = "read_chat", {"uri": rng.choice(uris), "limit": 20}
                elif roll >= 0.6:
                    name, args = "recent_chats", {"n": rng.choice([5, 10, 20])}
                else:
                    name, args = (
                        "conversation_search",
                        {"query": rng.choice(words), "max_results": rng.choice([3, 5, 10])},
                    )
                started = time.perf_counter()
                calls += 1
                try:
                    result = await client.call_tool(name, args)
                except Exception as error:  # every failure counts, whatever the transport raises
                    tally.errors.append(f"client {number} {name}: {describe(error)}")
                    continue
                tally.latencies[name].append(time.perf_counter() - started)
                text = "".join(getattr(block, "text", "") for block in result.content)
                if result.is_error:
                    tally.errors.append(f"client {number} {name} is_error: {text[:200]}")
                elif name != "read_chat":
                    uris = (URI.findall(text) + uris)[:50]
    except Exception as error:  # a session that fails to open or close is an error too
        # When, and after how many calls: a transport error's text is often empty.
        moment = f"{time.monotonic() - until:+.1f} s from the end, after {calls} calls"
        tally.errors.append(f"client {number} session ({moment}): {describe(error)}")


async def warm_up(url: str) -> float:
    """One search before the clock starts: the server loads the model and opens the store lazily."""
    started = time.perf_counter()
    async with Client(url) as client:
        result = await client.call_tool("conversation_search", {"query": "warm up the index"})
    if result.is_error:
        raise RuntimeError(f"the warm-up search failed: {result.content}")
    return time.perf_counter() - started


async def drive(url: str, clients: int, seconds: float) -> tuple[Tally, float]:
    tally = Tally()
    words = queries(seed=7, count=200)
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one_client, url, number, started + seconds, tally, words)
    return tally, time.monotonic() - started


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"calls": 0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {
        "calls": len(values),
        "p50_ms": at(0.5),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "mean_ms": round(statistics.fmean(values) * 1000, 1),
    }


def run(
    store: Path, host: str, clients: int, seconds: float, startup_timeout: float, server_log: Path
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pastchats-load-") as scratch:
        work = Path(scratch)
        user_home = work / "user-home"
        user_home.mkdir()
        source = work / "import.jsonl"
        chats = write_import_file(source)
        env = minimal_env(store, user_home)
        port = free_port(host)
        pastchats = Path(sys.executable).parent / "pastchats"
        serve_args = [
            str(pastchats),
            "--home",
            str(store),
            "serve",
            "--transport",
            "streamable-http",
            "--host",
            host,
            "--port",
            str(port),
        ]
        server: subprocess.Popen[bytes] | None = None
        importer: subprocess.Popen[str] | None = None
        try:
            # The server's stderr is kept: an "Internal error" result points there for its traceback.
            with server_log.open("w") as log:
                server = subprocess.Popen(serve_args, env=env, stdout=subprocess.DEVNULL, stderr=log)
            wait_listening(host, port, server, startup_timeout)
            warm = anyio.run(warm_up, f"http://{host}:{port}/mcp")
            importer = start_import(store, source, env)
            load_avg = os.getloadavg()
            tally, elapsed = anyio.run(drive, f"http://{host}:{port}/mcp", clients, seconds)
            importer_out, _ = importer.communicate(timeout=max(60.0, seconds))
            if importer.returncode != 0:
                tally.errors.append(f"import exited with {importer.returncode}: {importer_out[-500:]}")
            if server.poll() is not None:
                tally.errors.append(f"server exited during the run with status {server.returncode}")
        finally:
            stop(importer)
            stop(server)
    calls = sum(len(v) for v in tally.latencies.values())
    return {
        "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_at_start": load_avg,
            "load_avg_at_end": os.getloadavg(),
        },
        "warm_up_seconds": round(warm, 1),
        "clients": clients,
        "seconds": round(elapsed, 1),
        "import_chats": chats,
        "import": import_report(importer_out),
        "calls": calls,
        "calls_per_second": round(calls / elapsed, 1),
        "tools": {name: percentiles(values) for name, values in tally.latencies.items()},
        "errors": len(tally.errors),
        "error_samples": tally.errors[:20],
        "server_exit": server.returncode if server else None,
        "pids": {"server": server.pid if server else None, "import": importer.pid if importer else None},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.performance.load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--store", type=Path, help="an existing store (copied to a temporary directory first)")
    source.add_argument("--build", type=int, metavar="N", help="build a fresh store of N messages (hash vectors)")
    source.add_argument("--import-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (anything else is refused)")
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, help="result JSON (default bench/results/load-<time>.json)")
    args = parser.parse_args(argv)
    if args.import_child:
        import_child(args.home, args.import_child)
        return 0
    host = loopback_only(args.host)
    # A SIGTERM to the bench unwinds through the `finally` that stops the server and the import.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.store is None and args.build is None:
        parser.error("pass --store DIR or --build N")
    with tempfile.TemporaryDirectory(prefix="pastchats-load-store-") as scratch:
        store = Path(scratch) / "store"
        if args.store is not None:
            shutil.copytree(args.store, store)
        else:
            from bench.performance.perf_build import build

            build(store, args.build)
        out = args.out or RESULTS / f"load-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        log = out.with_suffix(".server.log")
        result = run(store, host, args.clients, args.seconds, args.startup_timeout, log)
    result["store"] = str(args.store) if args.store else f"built: {args.build} messages"
    result["server_log"] = str(log)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))
    print(f"written to {out}", file=sys.stderr)
    return 0 if result["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
