"""A store's health as it is on disk, read without repairing anything (for `pastchats doctor`).

Opening a `Library` repairs what it finds; this looks first, so the problems can be reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StoreHealth:
    home: Path
    exists: bool
    conversations: int = 0
    messages: int = 0
    passages: int = 0
    keyword_documents: int = 0
    awaiting_embeddings: int = 0
    interrupted_writes: int = 0
    unfinished_deletes: int = 0
    model: str | None = None

    @property
    def indexes_agree(self) -> bool:
        return self.passages == self.keyword_documents


def inspect(home: Path) -> StoreHealth:
    home = home.expanduser()
    if not (home / "lancedb").is_dir():
        return StoreHealth(home=home, exists=False)
    from storage.locks import WriteLock
    from storage.stores.keyword_index import KeywordIndex
    from storage.stores.lance_store import LanceStore

    try:
        meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    dim = meta.get("dim")
    store = LanceStore(home / "lancedb", dim if isinstance(dim, int) else 384)
    conversations, messages, passages = store.counts()
    journal = WriteLock(home)
    return StoreHealth(
        home=home,
        exists=True,
        conversations=conversations,
        messages=messages,
        passages=passages,
        keyword_documents=KeywordIndex(home / "keyword").doc_count(),
        awaiting_embeddings=store.pending_count(),
        interrupted_writes=len(journal.pending()),
        unfinished_deletes=len(journal.deleting()),
        model=str(meta["model"]) if meta.get("model") else None,
    )
