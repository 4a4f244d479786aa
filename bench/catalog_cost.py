"""What the catalog costs at scale: its size on disk and a full rebuild's time, for this checkout and
(same run, same store) another checkout's code, e.g. main before a change to the catalog's layout.

    python -m bench.catalog_cost --store /work/perf-stores/<copy> [--baseline-repo DIR] [--repeats 3]

Each rebuild runs in a fresh process (`catalog.refresh(home, store, None)`, as the first open after an
upgrade does) on the store as it is; the store is only read, and the catalog file is put back as it was.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REBUILD = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from storage.stores import catalog
from storage.library import Library
home = Path({home!r})
library = Library.open(home, load_model=False, heal=False)
started = time.process_time()
catalog.refresh(home, library.store, None)
print(time.process_time() - started)
"""


def rebuild(repo: Path, home: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the rebuild alone, catalog bytes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", REBUILD.format(repo=str(repo), home=str(home))],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LANCEDB_LOG": "error"},
    )
    wall = time.perf_counter() - started
    del before
    return wall, float(done.stdout.split()[-1]), (home / "catalog.sqlite").stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--baseline-repo", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    home = args.store
    saved = home / "catalog.sqlite.saved"
    shutil.copy2(home / "catalog.sqlite", saved)
    variants = {"this checkout": repo} | ({"baseline": args.baseline_repo.resolve()} if args.baseline_repo else {})
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in variants}
    try:
        for _ in range(args.repeats):
            for name, checkout in variants.items():
                results[name].append(rebuild(checkout, home))
    finally:
        os.replace(saved, home / "catalog.sqlite")
    print(f"store {home}; load average {os.getloadavg()[0]:.1f}")
    print("| code | rebuild CPU median s | rebuild wall median s (incl. start-up) | catalog MB |\n|---|---:|---:|---:|")
    for name, runs in results.items():
        cpu = statistics.median(r[1] for r in runs)
        wall = statistics.median(r[0] for r in runs)
        print(f"| {name} | {cpu:.2f} | {wall:.2f} | {runs[-1][2] / 1e6:.1f} |")


if __name__ == "__main__":
    main()
