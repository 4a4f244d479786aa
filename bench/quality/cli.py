"""`python -m bench.quality`: run the benchmarks, print the tables, write the JSON record."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from bench.quality.embed_cache import DEFAULT_CACHE, CachingEmbedder
from bench.quality.locomo import load_locomo
from bench.quality.longmemeval import VARIANTS, Variant, load_longmemeval
from bench.quality.report import print_report, write_json
from bench.quality.retrieve import BENCH_MODES, BenchMode
from bench.quality.run_locomo import run_locomo
from bench.quality.run_longmemeval import run_variant
from bench.quality.warm import all_conversations, warm
from storage.embedding.embedder import DEFAULT_MODEL, Embedder, EmbedderUnavailable, FastEmbedder, HashEmbedder
from storage.library import Library
from storage.units.passages import DEFAULT_OPTIONS, WINDOW_VECTORS, ChunkOptions

REPO = Path(__file__).resolve().parents[2]
LOCOMO_FILE = Path("locomo") / "locomo_dev.json"
LME_FILE = Path("longmemeval") / "longmemeval_s_dev.json"


def run_quality(
    data: Path,
    *,
    embedder: Embedder,
    only: str | None = None,
    limit: int | None = None,
    per_type: int | None = None,
    modes: list[BenchMode] | None = None,
    lme_variants: list[Variant] | None = None,
    label: str = "dev",
    workdir: Path | None = None,
    chunk_options: ChunkOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """Run the selected benchmarks and return the full record (what the JSON file holds)."""
    modes = modes or ["keyword", "vector", "hybrid", "plain"]
    started = time.perf_counter()
    record: dict[str, Any] = {
        "variant": label,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": str(data),
        "limit": limit,
        "lme_per_type": per_type,
        "modes": modes,
        "embedder": embedder.model_name,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "git": _git_revision(),
        "window_vectors": chunk_options.window_vectors,
    }

    def open_library(home: Path) -> Library:
        return Library.open(home, embedder=embedder, chunk_options=chunk_options)

    if only in (None, "locomo"):
        record["locomo"] = run_locomo(load_locomo(data / LOCOMO_FILE, limit), modes, open_library, workdir)
    if only in (None, "longmemeval"):
        questions = load_longmemeval(data / LME_FILE, limit, per_type)
        record["longmemeval"] = {
            variant: run_variant(questions, variant, modes, open_library, workdir)
            for variant in lme_variants or list(VARIANTS)
        }
    record["seconds"] = round(time.perf_counter() - started, 1)
    record["cache"] = (
        {"hits": embedder.hits, "misses": embedder.misses} if isinstance(embedder, CachingEmbedder) else None
    )
    return record


def _git_revision() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True, text=True)
    except OSError:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else None


def _csv(allowed: tuple[str, ...]) -> Any:
    def parse(value: str) -> list[str]:
        items = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in items if item not in allowed]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}")
        return items

    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench", help="benchmark data folder")
    p.add_argument("--only", choices=["locomo", "longmemeval"], help="run one benchmark")
    p.add_argument("--limit", type=int, help="first N LoCoMo conversations / LongMemEval questions (smoke runs)")
    p.add_argument("--lme-per-type", type=int, help="only the first N LongMemEval questions of each type")
    p.add_argument("--modes", type=_csv(BENCH_MODES), default=list(BENCH_MODES))
    p.add_argument("--lme-variants", type=_csv(VARIANTS), default=list(VARIANTS), help="user, full or both")
    p.add_argument("--variant", default="dev", help="a label for this run, recorded in the JSON and its name")
    p.add_argument("--out", type=Path, help="JSON output file (default bench/results/<timestamp>-<variant>.json)")
    p.add_argument("--model", default=DEFAULT_MODEL, help="fastembed model name")
    p.add_argument("--model-cache", type=Path, help="fastembed cache dir (default: FASTEMBED_CACHE_PATH)")
    p.add_argument("--embedder", choices=["fastembed", "hash"], default="fastembed", help="hash: a quick smoke run")
    p.add_argument("--embed-cache", type=Path, default=DEFAULT_CACHE, help="on-disk document embedding cache")
    p.add_argument("--warm", action="store_true", help="embed everything into the cache before importing")
    p.add_argument(
        "--window-vectors",
        choices=WINDOW_VECTORS,
        default=DEFAULT_OPTIONS.window_vectors,
        help="how exchange windows get their vectors (storage.units.passages.ChunkOptions)",
    )
    p.add_argument("--workdir", type=Path, help="where the temporary stores go (default: the system temp dir)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    wanted = {"locomo": LOCOMO_FILE, "longmemeval": LME_FILE}
    missing = [str(args.data / f) for name, f in wanted.items() if args.only in (None, name)]
    missing = [path for path in missing if not Path(path).is_file()]
    if missing:
        print(f"error: benchmark data not found: {', '.join(missing)} (see --data)", file=sys.stderr)
        return 2
    try:
        inner: Embedder = (
            HashEmbedder() if args.embedder == "hash" else FastEmbedder(args.model, cache_dir=args.model_cache)
        )
    except EmbedderUnavailable as exc:
        print(f"error: {exc} (set FASTEMBED_CACHE_PATH, or --embedder hash for a smoke run)", file=sys.stderr)
        return 2
    embedder = CachingEmbedder(inner, args.embed_cache)
    try:
        if args.warm:
            count = warm(
                all_conversations(args.data, args.only, args.limit, args.lme_variants, args.lme_per_type),
                embedder,
                log=False,
            )
            print(f"cache warm: {count} texts, {embedder.misses} newly embedded", file=sys.stderr)
            embedder.hits = embedder.misses = 0
        record = run_quality(
            args.data,
            embedder=embedder,
            only=args.only,
            limit=args.limit,
            per_type=args.lme_per_type,
            modes=cast(list[BenchMode], args.modes),
            lme_variants=cast(list[Variant], args.lme_variants),
            label=args.variant,
            workdir=args.workdir,
            chunk_options=replace(DEFAULT_OPTIONS, window_vectors=args.window_vectors),
        )
    finally:
        embedder.close()
    record["command"] = " ".join(["python -m bench.quality", *(argv if argv is not None else sys.argv[1:])])
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"{stamp}-{args.variant}.json"
    print_report(record)
    write_json(record, out)
    print(f"wrote {out}")
    return 0
