"""Readers in other processes while a writer imports and deletes old versions with a tiny grace.

    python -m bench.performance.read_stress [--seconds 60] [--grace-ms 100] [--readers 2] [--threads 16]

How the "Internal error" of the load run was found (docs/BENCHMARKS.md, "Load"): a writer process
imports 20 new chats at a time (each import compacts the tables), then deletes every version
superseded more than `--grace-ms` ago; `--readers` processes, each with one `Library` shared by
`--threads` threads as in the server, search, list and read until the time is up. Every exception a
reader sees is counted and its first lines printed, and so is each read retried after losing a file
(`storage.stores.lance_store` on stderr). Hash vectors; a fresh store in a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import multiprocessing
import random
import sys
import tempfile
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.corpus.synthetic import CorpusWriter
from storage.embedding.embedder import HashEmbedder
from storage.errors import NotFound
from storage.library import Library

WORDS = "nginx docker postgres python rust sourdough budget lisbon marathon homelab wedding cat".split()


def writer(home: Path, until: float, grace: timedelta) -> None:
    library = Library.open(home, embedder=HashEmbedder())
    chats = iter(CorpusWriter(10**7, seed=5))
    written = 0
    while time.time() < until:
        batch = [next(chats).model_copy(update={"id": f"stress-{written + i}"}) for i in range(20)]
        written += len(batch)
        library.import_conversations(batch)
        with library.lock.hold():
            library.store.prune(grace=grace)


def read_loop(library: Library, until: float, seed: int, errors: list[str], calls: list[int]) -> None:
    rng = random.Random(seed)
    while time.time() < until:
        try:
            roll = rng.random()
            if roll < 0.6:
                library.search(rng.choice(WORDS), max_results=rng.choice([3, 5, 10]))
            elif roll < 0.8:
                library.recent(n=10)
            else:
                ids = library.store.conversation_ids()
                with contextlib.suppress(NotFound):  # deleted or replaced meanwhile: not an error
                    library.read_chat(rng.choice(ids))
            calls.append(1)
        except Exception as error:  # every failure counts
            errors.append(f"{type(error).__name__}: {error}\n{traceback.format_exc()[-1200:]}")


def reader(home: Path, until: float, threads: int, number: int, out: Any) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("storage.stores.lance_store").setLevel(logging.INFO)  # shows each read that was retried
    library = Library.open(home, embedder=HashEmbedder())
    errors: list[str] = []
    calls: list[int] = []
    workers = [
        threading.Thread(target=read_loop, args=(library, until, number * 1000 + t, errors, calls))
        for t in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((len(calls), errors))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.performance.read_stress", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--grace-ms", type=int, default=100)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args(argv)
    context = multiprocessing.get_context("spawn")  # LanceDB's runtime does not survive a fork
    with tempfile.TemporaryDirectory(prefix="pastchats-stress-") as scratch:
        home = Path(scratch) / "store"
        Library.open(home, embedder=HashEmbedder()).import_conversations(CorpusWriter(3000, seed=1))
        until = time.time() + args.seconds
        out = context.Queue()
        readers = [
            context.Process(target=reader, args=(home, until, args.threads, n, out)) for n in range(args.readers)
        ]
        grace = timedelta(milliseconds=args.grace_ms)
        write = context.Process(target=writer, args=(home, until, grace))
        for process in [*readers, write]:
            process.start()
        results = [out.get() for _ in readers]
        for process in [*readers, write]:
            process.join()
    calls = sum(n for n, _ in results)
    errors = [e for _, found in results for e in found]
    for error in errors[:5]:
        print(error, file=sys.stderr)
    print(f"{calls} reads, {len(errors)} errors ({args.readers} processes x {args.threads} threads, "
          f"grace {args.grace_ms} ms, {args.seconds:.0f} s)")  # fmt: skip
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
