"""Wall time of CLI commands a new user runs first, against a bare interpreter start in the same run.

    uv run python -m bench.cli_startup --repeats 15 [--baseline-repo ../main] [--model-cache DIR]

Each round runs every command once, in the same order (so machine noise hits them alike); medians
and p95 over the rounds. The store is the bundled sample chats, imported once with the real model when
`--model-cache` is given (else keyword-only). `--baseline-repo` also times the same commands from
another checkout's code (e.g. main before a change), through the same interpreter.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys; sys.path.insert(0, {repo!r}); from server.cli import main; sys.argv[0] = 'pastchats'; main()"


def commands(home: Path, missing: Path) -> dict[str, list[str]]:
    return {
        "stats": ["--home", str(home), "stats"],
        "recent": ["--home", str(home), "recent"],
        "import of a missing path": ["--home", str(home), "import", str(missing)],
        "--help": ["--help"],
    }


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--baseline-repo", type=Path, help="also time this checkout's code (e.g. ../main)")
    parser.add_argument("--model-cache", type=Path, help="a fastembed cache holding the model")
    args = parser.parse_args()

    repo = Path(__file__).resolve().parents[1]
    work = Path(tempfile.mkdtemp(prefix="pastchats-bench-"))
    env = {"HOME": str(work), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PASTCHATS_SYNC": "false"}
    if args.model_cache:
        env["PASTCHATS_MODEL_CACHE"] = str(args.model_cache)
        env["FASTEMBED_CACHE_PATH"] = str(args.model_cache)  # what an older checkout reads
    home = work / "store"
    setup = [sys.executable, "-c", CLI.format(repo=str(repo)), "--home", str(home), "import", "--sample"]
    subprocess.run(setup, env=env, check=True, capture_output=True)

    variants = {"this checkout": repo} | ({"baseline": args.baseline_repo.resolve()} if args.baseline_repo else {})
    runs: dict[str, list[str]] = {"bare interpreter (python -c pass)": [sys.executable, "-c", "pass"]}
    for label, code in variants.items():
        for name, argv in commands(home, work / "missing.json").items():
            runs[f"{name} [{label}]"] = [sys.executable, "-c", CLI.format(repo=str(code)), *argv]
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, argv in runs.items():
            times[name].append(timed(argv, env))

    bare = statistics.median(times["bare interpreter (python -c pass)"])
    print(f"{args.repeats} rounds; {os.cpu_count()} cores; store: the sample chats")
    print("| command | median s | p95 s | x bare interpreter |\n|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} | {p95(values):.3f} | {median / bare:.1f} |")


if __name__ == "__main__":
    main()
