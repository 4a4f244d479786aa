"""Passages awaiting their embedding: keyword-searchable at once, embedded later in resumable batches."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.storage.helpers import conversation

CHATS = [
    conversation("bread", ["my sourdough starter smells of acetone", "feed it twice a day"]),
    conversation("proxy", ["nginx reverse proxy for jellyfin", "use proxy_pass to port 8096"]),
    *[conversation(f"f{i}", [f"filler chat {i} about knitting", "more yarn please"]) for i in range(12)],
]


def ids(result: object) -> list[str]:
    return [chat.uri for chat in result.chats]  # type: ignore[attr-defined]


def vectors(library: Library) -> dict[str, list[float]]:
    rows = library.store.chunks.search().select(["id", "vector"]).limit(None).to_arrow().to_pylist()
    return {row["id"]: row["vector"] for row in rows}


def test_an_import_without_embedding_is_keyword_searchable_at_once_and_vector_searchable_after(
    tmp_path: Path,
) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS, embed=False)
    # two messages and one exchange window per chat
    assert library.pending_embeddings() == library.store.chunks.count_rows() == 28 + 14
    assert ids(library.search("sourdough acetone", mode="keyword"))[0] == "bread"
    assert ids(library.search("sourdough acetone", mode="vector")) == []
    seen: list[tuple[int, int]] = []
    assert library.embed_pending(progress=lambda done, total: seen.append((done, total)), batch=8) == 42
    assert library.pending_embeddings() == 0
    assert seen[-1] == (42, 42)
    assert len(seen) > 1
    assert ids(library.search("sourdough acetone", mode="vector"))[0] == "bread"
    assert library.store.matrix.snapshot() is not None
    assert not library.store.matrix_needs_build()


def test_an_interrupted_embedding_run_resumes_and_ends_with_the_vectors_an_embedding_import_makes(
    tmp_path: Path,
) -> None:
    direct = Library.open(tmp_path / "direct", embedder=HashEmbedder())
    direct.import_conversations(CHATS)
    library = Library.open(tmp_path / "later", embedder=HashEmbedder())
    library.import_conversations(CHATS, embed=False)

    def killed(done: int, total: int) -> None:
        raise KeyboardInterrupt  # dies after its first committed batch

    with pytest.raises(KeyboardInterrupt):
        library.embed_pending(progress=killed, batch=6)
    left = library.pending_embeddings()
    assert 0 < left < 42
    with library.lock.hold(timeout=0):  # the lock was released
        pass
    reopened = Library.open(tmp_path / "later", embedder=HashEmbedder())
    assert reopened.embed_pending() == left
    ours, theirs = vectors(reopened), vectors(direct)
    assert ours.keys() == theirs.keys()
    assert all(np.allclose(ours[key], theirs[key]) for key in ours)


def test_stored_embeddings_are_reused_so_unchanged_text_never_waits(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS[:1])
    copy = conversation("copy", ["my sourdough starter smells of acetone", "something new"])
    library.import_conversations([copy], embed=False)
    assert library.pending_embeddings() == 2  # the new message and the chat's window


def test_a_store_from_before_pending_passages_is_upgraded_in_place(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS[:2])
    library.store.chunks.drop_columns(["pending"])
    reopened = Library.open(tmp_path / "store", embedder=HashEmbedder())
    assert reopened.pending_embeddings() == 0
    assert ids(reopened.search("sourdough acetone", mode="vector"))[0] == "bread"


def test_compaction_deletes_old_versions_while_another_reader_keeps_reading(tmp_path: Path) -> None:
    writer = Library.open(tmp_path / "store", embedder=HashEmbedder())
    for i, chat in enumerate(CHATS):  # one version per import: history to delete
        writer.import_conversations([chat], embed=i % 2 == 0)
    reader = Library.open(tmp_path / "store", embedder=HashEmbedder())
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                assert ids(reader.search("nginx proxy jellyfin", mode="keyword"))[0] == "proxy"
                reader.search("knitting yarn", mode="vector")
                reader.recent(n=3)
            except BaseException as exc:
                errors.append(exc)
                return

    thread = threading.Thread(target=read)
    thread.start()
    with writer.lock.hold():
        writer.store.optimize(grace=timedelta(0))
    stop.set()
    thread.join()
    assert errors == []
    assert writer.store.disk_bytes() <= 1.3 * writer.store.live_bytes()
    assert ids(reader.search("sourdough acetone", mode="keyword"))[0] == "bread"


def test_passages_whose_chat_is_gone_do_not_keep_the_embedding_run_going(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS[:3], embed=False)
    library.store.conversations.delete("id = 'bread'")  # orphaned chunks, as a crash could leave them
    assert library.embed_pending(batch=2) == 4 + 2  # two chats' messages and windows
    assert library.pending_embeddings() == 3


def test_an_embedding_run_counts_only_its_own_work_and_finds_chats_written_between_its_batches(
    tmp_path: Path,
) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(CHATS, embed=False)
    other = Library.open(tmp_path / "store", embedder=HashEmbedder())  # another process's handle
    waiting = library.store.pending_owners()
    assert max(waiting) == "proxy"  # the run's last batch, unless the other process gets there first
    late = conversation("late", ["a chat imported while the run was going", "found all the same"])

    def meanwhile(done: int, total: int) -> None:
        if not other.chats.metas([late.id]):  # once
            other.import_conversations([late], embed=False)  # new, waiting: this run must embed it too
            grown = conversation("proxy", ["nginx reverse proxy for jellyfin", "use proxy_pass to port 8096", "done"])
            other.import_conversations([grown])  # embedded there: no longer this run's to embed

    ours = library.embed_pending(progress=meanwhile, batch=6)
    assert library.pending_embeddings() == 0
    assert ours == sum(waiting.values()) - waiting["proxy"] + 3  # the late chat: two messages, one window
    assert ids(library.search("imported while the run was going", mode="vector"))[0] == "late"
