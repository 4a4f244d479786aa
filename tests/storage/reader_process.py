"""A reader in its own process that stops in the middle of a query until told to go on.

It streams every passage of a store (one LanceDB query read batch by batch, registered as a reader as
the store's own long reads are),
says "reading" after the first batch, waits for a line on stdin, reads the rest and prints the count.
"""

from __future__ import annotations

import sys
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library

if __name__ == "__main__":
    library = Library.open(Path(sys.argv[1]), embedder=HashEmbedder())
    store = library.store
    with store.readers.reading():
        batches = store.chunks.search().select(["id"]).limit(None).to_batches(1)
        count = next(batches).num_rows
        print("reading", flush=True)
        sys.stdin.readline()
        try:
            count += sum(batch.num_rows for batch in batches)
        except Exception as error:
            print(f"failed: {type(error).__name__}: {error}", flush=True)
            sys.exit(1)
    print(f"read {count}", flush=True)
