"""A separate process that imports a JSONL file into a store: used to kill writers and race them."""

from __future__ import annotations

import sys
from pathlib import Path

from importers.registry import read
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

if __name__ == "__main__":
    home, source = Path(sys.argv[1]), Path(sys.argv[2])
    conversations, _ = read(source)
    stats = Library.open(home, embedder=HashEmbedder()).import_conversations(conversations)
    print(f"new={stats.new} updated={stats.updated} unchanged={stats.unchanged}", flush=True)
