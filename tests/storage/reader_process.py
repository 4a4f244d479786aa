"""A reader in its own process that stops in the middle of a query until told to go on.

It streams every passage of a store (`LanceStore.chunk_rows`, one LanceDB query read batch by batch),
says "reading" after the first batch, waits for a line on stdin, reads the rest and prints the count.
"""

from __future__ import annotations

import sys
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library

if __name__ == "__main__":
    library = Library.open(Path(sys.argv[1]), embedder=HashEmbedder())
    rows = library.store.chunk_rows(batch=1)
    count = 1 if next(rows, None) is not None else 0
    print("reading", flush=True)
    sys.stdin.readline()
    try:
        count += sum(1 for _ in rows)
    except Exception as error:
        print(f"failed: {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"read {count}", flush=True)
