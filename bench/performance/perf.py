"""Speed and memory at scale: build a realistic store, then measure it against same-run baselines.

    python -m bench.performance.perf build --messages 100000 --home STORE [--vectors hash|model]
    python -m bench.performance.perf run --home STORE [--repeats 40] [--out bench/results/perf.json]

`build` is public: other benchmarks and load tests call it (or `bench.performance.perf_build.build`) to get a
store of any size. `run` measures, each with a baseline taken in the same run (this machine is
shared and noisy: read the ratios), see `bench/performance/perf_run.py`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from storage.embedding.embedder import DEFAULT_MODEL


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("LANCEDB_LOG", "error")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    parser = argparse.ArgumentParser(prog="python -m bench.performance.perf", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build a realistic store")
    build.add_argument("--messages", type=int, required=True)
    build.add_argument("--home", type=Path, required=True)
    build.add_argument("--vectors", choices=["hash", "model"], default="hash")
    build.add_argument("--model", default=DEFAULT_MODEL, help="the model the store is for (hash vectors claim it)")
    build.add_argument("--seed", type=int, default=12)
    build.add_argument(
        "--deferred", action="store_true", help="`pastchats import`'s path: store first, then embed in batches"
    )
    build.add_argument(
        "--store-only", action="store_true", help="with --deferred: stop once the chats are keyword-searchable"
    )
    run = commands.add_parser("run", help="measure a store built by `build`")
    run.add_argument("--home", type=Path, required=True)
    run.add_argument("--repeats", type=int, default=40, help="searches per measurement")
    run.add_argument("--spawns", type=int, default=5, help="server start-ups per measurement")
    run.add_argument("--only", default="", help="comma list: search,startup,rss,disk,import,cli")
    run.add_argument("--import-messages", type=int, default=600, help="messages for the real-model import run")
    run.add_argument(
        "--import-direct", action="store_true", help="import embedding at once, not `pastchats import`'s way"
    )
    run.add_argument(
        "--baseline-pastchats",
        type=Path,
        help="another install's `pastchats` (e.g. main's .venv/bin/pastchats): start-up and RSS also measured "
        "for it, interleaved spawn by spawn with this one's",
    )
    run.add_argument(
        "--compare-home",
        type=Path,
        help="another store (e.g. a smaller one): start-up and RSS also measured on it with this install, "
        "spawn for spawn",
    )
    run.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        from bench.performance.perf_build import build as build_store

        record = build_store(
            args.home,
            args.messages,
            vectors=args.vectors,
            model=args.model,
            seed=args.seed,
            deferred=args.deferred,
            store_only=args.store_only,
        )
        print(json.dumps(record, indent=2))
    else:
        from bench.performance.perf_run import run as run_all

        only = {part for part in args.only.split(",") if part}
        results = run_all(
            args.home,
            repeats=args.repeats,
            spawns=args.spawns,
            only=only,
            import_messages=args.import_messages,
            import_deferred=not args.import_direct,
            baseline_pastchats=args.baseline_pastchats,
            compare_home=args.compare_home,
        )
        text = json.dumps(results, indent=2)
        print(text)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
