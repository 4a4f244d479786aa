"""A machine's exchange with the shared store, in a process of its own (what `pastchats sync` does
after reading the agent logs), so that a test can run two at once and kill one with SIGKILL.

Usage: python -m tests.shared_store.exchange_process HOME URI"""

from __future__ import annotations

import sys
from pathlib import Path

from storage.library import Library
from storage.stores.shared_store import SharedStore


def main(home: str, uri: str) -> None:
    library = Library.open(Path(home), load_model=False)
    library.share(SharedStore(uri))
    print("exchanging", flush=True)
    report = library.exchange()
    print(report.text(), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
