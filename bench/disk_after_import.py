"""Disk against live data right after an import, with a baseline revision in the same run.

    python -m bench.disk_after_import --messages 10000 [--baseline-repo ../main] [--repeats 2]

Each run builds a fresh store through `pastchats import`'s path (the perf builder, hash vectors,
stored first and then embedded in batches) and measures the LanceDB folder against the tables'
current versions (`Table.stats()["total_bytes"]`) the moment the import returns, before anything
reopens the store (an open that takes the write lock cleans up too, which would flatter the figure).
A baseline repository runs the same script with its own code (its `.venv`), alternating with ours.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def child(home: Path, messages: int) -> dict[str, Any]:
    """Build and measure in this interpreter (whatever code its sys.path holds)."""
    import bench.perf_build as perf_build
    from storage.library import Library

    measured: dict[str, Any] = {}
    close = Library.close

    def measure_then_close(library: Library) -> None:
        store = library.store
        disk, live = store.disk_bytes(), store.live_bytes()
        measured.update(
            lancedb_disk_mb=round(disk / 1e6, 1),
            live_mb=round(live / 1e6, 1),
            ratio=round(disk / live, 2),
            versions={table.name: len(table.list_versions()) for table in store._tables()},
        )
        close(library)

    Library.close = measure_then_close  # type: ignore[method-assign]
    record = perf_build.build(home, messages, vectors="hash", deferred=True)
    measured["import_seconds"] = record["import_seconds"]
    return measured


def run_in(repo: Path, messages: int) -> dict[str, Any]:
    python = repo / ".venv" / "bin" / "python"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(repo)}
        command = [str(python), str(HERE), "--child", str(Path(tmp) / "store"), "--messages", str(messages)]
        out = subprocess.run(command, cwd=repo, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.disk_after_import", description=__doc__)
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--baseline-repo", type=Path)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.messages)))
        return
    repos = {"this": HERE.parents[1]}
    if args.baseline_repo is not None:
        repos["baseline"] = args.baseline_repo.resolve()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in repos}
    for _ in range(args.repeats):
        for name, repo in repos.items():  # alternated: both see the same machine
            runs[name].append(run_in(repo, args.messages))
            print(name, runs[name][-1], file=sys.stderr, flush=True)
    summary = {
        name: {"median_ratio": statistics.median(run["ratio"] for run in done), "runs": done}
        for name, done in runs.items()
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
