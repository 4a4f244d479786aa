"""Live sync's small writes: searchable at once, embedded without compacting, folded in by `compact`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.tools.helpers import BASE, chat


def test_a_live_write_is_keyword_searchable_at_once_and_compact_leaves_nothing_to_repair(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    texts = ["How do I proxy Jellyfin through nginx?", "Use proxy_pass to port 8096."]
    library.import_conversations([chat("nginx", texts), chat("bread", ["Starter smells of acetone", "Feed it."])])
    grown = chat("nginx", [*texts, "And the quasarlink header?", "Set quasarlink on."], updated=BASE + timedelta(1))

    library.import_conversations([grown], embed=False, live=True)
    assert [c.uri for c in library.search("quasarlink", mode="keyword").chats] == ["nginx"]
    assert library.pending_embeddings() > 0

    library.embed_pending(batch=1, fold=False)
    assert library.pending_embeddings() == 0
    assert library.store.matrix_needs_build() is False  # the change log covers the new vectors meanwhile
    library.compact()
    reopened = Library.open(tmp_path / "store", embedder=HashEmbedder(), heal=False)
    assert reopened.needs_repair() is False
    assert [c.uri for c in reopened.search("quasarlink", mode="keyword").chats] == ["nginx"]
    assert len(reopened.get("nginx").messages) == 4
