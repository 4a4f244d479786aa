"""A separate process that forgets every Claude Code chat in a store: killed at random by the tests."""

from __future__ import annotations

import sys
from pathlib import Path

from importers.sources.privacy import forget
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

if __name__ == "__main__":
    library = Library.open(Path(sys.argv[1]), embedder=HashEmbedder())
    print("ready", flush=True)
    print(f"forgot {forget(library, source='claude-code')}", flush=True)
