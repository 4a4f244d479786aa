"""Wall time of CLI commands a new user runs first, against a bare interpreter start in the same run.

    uv run python -m bench.performance.cli_startup --repeats 15 [--baseline-repo ../main] [--model-cache DIR]
                                        [--store DIR] [--only search stats ...] [--where]

Each round runs every command once, in the same order (so machine noise hits them alike); medians
and p95 over the rounds, of wall time and of CPU time (user + system: less sensitive to a busy
machine). The store is the bundled sample chats, imported once with the real model when
`--model-cache` is given (else keyword-only), or a copy of `--store` (e.g. the 100k perf store).
`--where` adds, for each command of this checkout, where its start-up goes: one run under
`python -X importtime`, the import time of each top-level package (what a lazy import would save).
`--baseline-repo` also times the same commands from another checkout's code (e.g. main before a
change), through that checkout's own `.venv` when it has one (else this interpreter). `import
lancedb` is also timed alone. The commands that delete a chat run on a fresh copy of the store each
time (not timed); the next command waits until that delete has been finished (an older checkout
finished it in a background process) and the copy is gone, so no round pays for another's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CLI = "import sys; sys.path.insert(0, {repo!r}); from server.cli import main; sys.argv[0] = 'pastchats'; main()"


def commands(home: Path, missing: Path, uri: str, plain: Path) -> dict[str, list[str]]:
    return {
        "search": ["--home", str(home), "search", "monstera yellow leaves"],
        "stats": ["--home", str(home), "stats"],
        "recent": ["--home", str(home), "recent"],
        "read": ["--home", str(home), "read", uri],
        "read --json": ["--home", str(home), "read", uri, "--json"],
        "export": ["--home", str(home), "export", "--out", "-"],
        "delete (no such chat)": ["--home", str(home), "delete", "no-such-chat"],
        "forget (nothing matches)": ["--home", str(home), "forget", "--project", "no-such-project", "--yes"],
        "delete (one chat)": ["--home", str(home), "delete", uri],
        "forget (the same chat by project)": ["--home", str(home), "forget", "--project", "{project}", "--yes"],
        "import of a missing path": ["--home", str(home), "import", str(missing)],
        "import --format of an unknown format": ["--home", str(home), "import", "--format", "xml", str(plain)],
        "import --format claude of a plain file": ["--home", str(home), "import", "--format", "claude", str(plain)],
        "argument error (recent -n 99)": ["recent", "-n", "99"],
        "--help": ["--help"],
    }


IMPORTS = {"import lancedb": "import lancedb"}


# Commands that change the store: timed on a copy made just before (see the module's docstring).
CHANGES = ("delete (one chat)", "forget (the same chat by project)")


def on_a_copy(argv: list[str], home: Path) -> tuple[list[str], Path]:
    """`argv` pointed at a fresh copy of `home`."""
    copy = home.with_name(home.name + "-scratch")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(home, copy, symlinks=True)
    return [str(copy) if arg == str(home) else arg for arg in argv], copy


def settled(copy: Path) -> None:
    """Wait until any delete committed in `copy` is finished and the lock let go, then remove it."""
    deadline = time.monotonic() + 120
    while (copy / "journal.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    lock = copy / "write.lock"
    if lock.exists():
        import fcntl

        with lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # the finisher holds it until it is done
    shutil.rmtree(copy, ignore_errors=True)


def python_of(checkout: Path) -> str:
    """The checkout's own interpreter (its dependencies may differ from this one's), else this one."""
    own = checkout / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


IMPORT_LINE = re.compile(r"import time:\s+(?P<own>\d+) \|\s+\d+ \| (?P<name>.+)$")


def where_the_time_goes(argv: list[str], env: dict[str, str], top: int = 8) -> str:
    """One run under `-X importtime`: the seconds spent importing, per top-level package, largest first."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True, check=False
    )
    spent: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        if found := IMPORT_LINE.match(line):
            spent[found["name"].strip().split(".")[0]] += int(found["own"])
    listed = ", ".join(f"{name} {micros / 1e6:.2f}" for name, micros in spent.most_common(top))
    return f"imports {sum(spent.values()) / 1e6:.2f} s: {listed}"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--baseline-repo", type=Path, help="also time this checkout's code (e.g. ../main)")
    parser.add_argument("--model-cache", type=Path, help="a fastembed cache holding the model")
    parser.add_argument("--store", type=Path, help="time against a copy of this store instead of the sample")
    parser.add_argument("--only", nargs="+", metavar="COMMAND", help="time only these commands")
    parser.add_argument("--where", action="store_true", help="also show each command's import time per package")
    args = parser.parse_args()

    repo = Path(__file__).resolve().parents[2]
    work = Path(tempfile.mkdtemp(prefix="pastchats-bench-"))
    env = {"HOME": str(work), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PASTCHATS_SYNC": "false"}
    if args.model_cache:
        env["PASTCHATS_MODEL_CACHE"] = str(args.model_cache)
        env["FASTEMBED_CACHE_PATH"] = str(args.model_cache)  # what an older checkout reads
    home = work / "store"
    if args.store:
        shutil.copytree(args.store, home)
    else:
        setup = [sys.executable, "-c", CLI.format(repo=str(repo)), "--home", str(home), "import", "--sample"]
        subprocess.run(setup, env=env, check=True, capture_output=True)
    variants = {"this checkout": repo} | ({"baseline": args.baseline_repo.resolve()} if args.baseline_repo else {})
    # Each variant reads its own copy: a catalog in another code's format would be rebuilt by every
    # command, in turn by each variant. One run first: a copy's catalog may need rebuilding (once).
    homes = {label: home if label == "this checkout" else work / f"store-{i}" for i, label in enumerate(variants)}
    for label, checkout in variants.items():
        if homes[label] != home:
            shutil.copytree(home, homes[label], symlinks=True)
        listing = [python_of(checkout), "-c", CLI.format(repo=str(checkout)), "--home", str(homes[label])]
        done = subprocess.run([*listing, "recent", "-n", "1", "--json"], env=env, check=True, capture_output=True)
        newest = json.loads(done.stdout)["chats"][0]
        uri, project = newest["uri"], newest["project"]

    plain = work / "chats.json"  # a file in the plain format, imported as another: refused, it names the format
    plain.write_text('{"conversations": []}\n', encoding="utf-8")
    runs: dict[str, list[str]] = {"bare interpreter (python -c pass)": [sys.executable, "-c", "pass"]}
    scratch: dict[str, Path] = {}  # the commands run on a copy of this store
    for label, checkout in variants.items():
        for name, argv in commands(homes[label], work / "missing.json", uri, plain).items():
            if args.only and name not in args.only:
                continue
            argv = [arg.replace("{project}", project or "") for arg in argv]
            runs[f"{name} [{label}]"] = [python_of(checkout), "-c", CLI.format(repo=str(checkout)), *argv]
            if name in CHANGES:
                scratch[f"{name} [{label}]"] = homes[label]
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    load = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, argv in runs.items():
            copy = None
            if name in scratch:
                argv, copy = on_a_copy(argv, scratch[name])
            wall, cpu = timed(argv, env)
            if copy is not None:
                settled(copy)
            walls[name].append(wall)
            cpus[name].append(cpu)

    bare = statistics.median(walls["bare interpreter (python -c pass)"])
    bare_cpu = statistics.median(cpus["bare interpreter (python -c pass)"])
    store = args.store or "the sample chats"
    print(f"{args.repeats} rounds; {os.cpu_count()} cores; load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"store: {store}")
    print("| command | median s | p95 s | x bare | CPU median s | CPU x bare |\n|---|---:|---:|---:|---:|---:|")
    for name, values in walls.items():
        median, cpu = statistics.median(values), statistics.median(cpus[name])
        print(f"| {name} | {median:.3f} | {p95(values):.3f} | {median / bare:.1f} | {cpu:.3f} | {cpu / bare_cpu:.1f} |")
    if args.where:
        print("\nWhere the start-up goes (one run each, python -X importtime; seconds per top-level package):")
        for name, argv in runs.items():
            if name.endswith("[this checkout]") and name not in scratch:
                print(f"- {name.removesuffix(' [this checkout]')}: {where_the_time_goes(argv, env)}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
