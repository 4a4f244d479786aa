"""A store that heals itself: files really damaged on disk (real LanceDB, Tantivy and SQLite), then
opened as the commands open it. Derived structures are rebuilt (the keyword index without the model),
a damaged table goes back to its newest whole version or is rebuilt from the catalog, lost passages
are derived again from the conversations, and no repair ever replaces a richer structure with a
poorer one."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.upkeep.healing import RESTORING
from storage.writing.ingest import MESSAGE_CHARS
from storage.writing.locks import Readers
from tests.storage.helpers import conversation

CHATS = [
    conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."]),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
    conversation("zfs", ["When should a ZFS scrub run?", "Monthly is plenty for a home pool."], day=2),
]
FINDS = {"nginx": "jellyfin", "bread": "sourdough", "zfs": "scrub"}


def make_store(home: Path) -> None:
    library = Library.open(home, embedder=HashEmbedder())
    library.import_conversations(CHATS)
    library.close()


def found(library: Library, word: str) -> list[str]:
    return [chat.uri for chat in library.search(word, mode="keyword").chats]


def every_chat_is_found(library: Library) -> None:
    for cid, word in FINDS.items():
        assert cid in found(library, word), f"{cid} is not found by {word!r}"


def halve(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garble_meta(home: Path) -> None:
    (home / "keyword" / "meta.json").write_text("garbage", encoding="utf-8")


def delete_term_files(home: Path) -> None:
    for path in (home / "keyword").glob("*.term"):
        path.unlink()


def halve_segments(home: Path) -> None:
    for path in (home / "keyword").iterdir():
        if path.suffix in (".term", ".idx", ".store", ".pos"):
            halve(path)


def delete_keyword_index(home: Path) -> None:
    shutil.rmtree(home / "keyword")


@pytest.mark.parametrize("damage", [garble_meta, delete_term_files, halve_segments, delete_keyword_index])
def test_a_damaged_keyword_index_is_rebuilt_without_the_model_and_says_so_once(
    tmp_path: Path, damage: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "store"
    make_store(home)
    damage(home)
    with caplog.at_level(logging.WARNING, logger="storage.library"):
        library = Library.open(home, load_model=False)  # no model: keyword search is all there is
    every_chat_is_found(library)
    said = [r.getMessage() for r in caplog.records if "keyword index" in r.getMessage()]
    assert len(said) == 1, said
    assert "no model needed" in said[0]
    assert library.keywords.doc_count() == library.store.chunk_count() > 0


def test_reads_answer_from_what_is_intact_while_the_keyword_index_cannot_be_rebuilt(tmp_path: Path) -> None:
    home = tmp_path / "store"
    make_store(home)
    garble_meta(home)
    library = Library.open(home, embedder=HashEmbedder(), heal=False)  # as a server opens it: nothing repaired yet
    assert library.keywords.damage is not None
    assert library.needs_repair()
    assert [c.uri for c in library.recent(n=3).chats] == ["zfs", "bread", "nginx"]
    assert "nginx" in [chat.uri for chat in library.search("How do I put nginx in front of Jellyfin?").chats]


@pytest.mark.parametrize(
    "damage",
    [
        lambda home: (home / "catalog.sqlite").unlink(),
        lambda home: halve(home / "catalog.sqlite"),
        lambda home: (home / "catalog.sqlite").write_bytes(b"not a database at all" * 100),
    ],
    ids=["deleted", "halved", "garbled"],
)
def test_a_lost_or_damaged_catalog_is_rebuilt_from_the_conversations(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    home = tmp_path / "store"
    make_store(home)
    damage(home)
    library = Library.open(home, load_model=False, heal=False)
    assert library.needs_repair()
    library.repair()
    assert library.stats().conversations == 3
    assert library.read_chat("bread").messages[0].text == "My sourdough starter smells of acetone"
    every_chat_is_found(library)


def test_a_cut_vector_matrix_is_rebuilt(tmp_path: Path) -> None:
    home = tmp_path / "store"
    make_store(home)
    (f16,) = (home / "vectors").glob("*.f16")
    halve(f16)
    library = Library.open(home, embedder=HashEmbedder(), heal=False)
    assert library.store.matrix.damage() is not None
    assert library.needs_repair()
    library.repair()
    assert library.store.matrix.damage() is None
    assert library.store.matrix.snapshot() is not None
    assert "bread" in [c.uri for c in library.search("My sourdough starter smells of acetone", mode="vector").chats]


def test_lost_passages_are_derived_again_from_the_conversations_and_await_their_embedding(tmp_path: Path) -> None:
    """Re-importing could not bring them back: the chats themselves are unchanged."""
    home = tmp_path / "store"
    make_store(home)
    shutil.rmtree(home / "lancedb" / "chunks.lance")
    library = Library.open(home, load_model=False)  # no model
    every_chat_is_found(library)
    assert library.pending_embeddings() == library.store.chunk_count() > 0
    assert library.import_conversations(CHATS).unchanged == 3
    with_model = Library.open(home, embedder=HashEmbedder())
    assert with_model.embed_pending() > 0
    assert "zfs" in [c.uri for c in with_model.search("When should a ZFS scrub run?", mode="vector").chats]


def test_a_keyword_index_is_never_rebuilt_from_a_table_that_lost_its_chats(tmp_path: Path) -> None:
    """With the conversations table and the catalog both gone, the keyword index is the richest copy
    left: it is kept, and what cannot be restored is named."""
    home = tmp_path / "store"
    make_store(home)
    documents = Library.open(home, load_model=False, heal=False).keywords.doc_count()
    shutil.rmtree(home / "lancedb" / "conversations.lance")
    (home / "catalog.sqlite").unlink()
    library = Library.open(home, load_model=False)
    assert library.keywords.doc_count() == documents
    assert any("import your chats again" in line for line in library.mend())


def delete_manifests(home: Path) -> None:
    for path in (home / "lancedb" / "conversations.lance" / "_versions").glob("*.manifest"):
        path.unlink()


def halve_data_files(home: Path) -> None:
    for path in (home / "lancedb" / "conversations.lance" / "data").iterdir():
        halve(path)


@pytest.mark.parametrize("damage", [delete_manifests, halve_data_files, lambda h: shutil.rmtree(h / "lancedb")])
def test_a_damaged_conversations_table_is_rebuilt_from_the_catalog(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    home = tmp_path / "store"
    make_store(home)
    damage(home)
    library = Library.open(home, load_model=False)
    assert library.store.conversation_count() == 3
    every_chat_is_found(library)
    assert library.get("zfs").messages[1].text == "Monthly is plenty for a home pool."
    added = library.import_conversations([conversation("late", ["a zeppelin hangar question", "an answer"], day=9)])
    assert added.new == 1
    assert library.stats().conversations == 4


def test_a_cut_table_goes_back_to_its_newest_whole_version_and_the_catalog_fills_in_the_rest(
    tmp_path: Path,
) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    with Readers(home / "lancedb.readers").reading():  # a reader mid-read: old versions are kept
        library.import_conversations(CHATS[:2])
        data = home / "lancedb" / "conversations.lance" / "data"
        before = set(data.iterdir())
        library.import_conversations(CHATS[2:])
    for path in set(data.iterdir()) - before:  # the files only the newest versions read
        halve(path)
    reopened = Library.open(home, load_model=False)
    assert reopened.store.conversation_count() == 3
    every_chat_is_found(reopened)


def test_a_restore_a_crash_cut_short_is_finished_by_the_next_writer(tmp_path: Path) -> None:
    home = tmp_path / "store"
    make_store(home)
    library = Library.open(home, load_model=False)
    library.store.conversations.delete("id IN ('bread', 'zfs')")  # two chats not yet written back
    (home / RESTORING).write_text(json.dumps({"newer_than": None}), encoding="utf-8")
    reopened = Library.open(home, load_model=False)
    assert not (home / RESTORING).exists()
    assert reopened.store.conversation_count() == 3
    every_chat_is_found(reopened)


def test_a_store_json_naming_another_size_of_vectors_is_corrected(tmp_path: Path) -> None:
    home = tmp_path / "store"
    make_store(home)
    meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    (home / "store.json").write_text(json.dumps(meta | {"dim": 512}), encoding="utf-8")
    library = Library.open(home, load_model=False)  # read commands: no model to tell the size
    assert library.store.dim == HashEmbedder().dim
    every_chat_is_found(library)
    assert json.loads((home / "store.json").read_text(encoding="utf-8"))["dim"] == HashEmbedder().dim


def test_a_message_over_the_limit_is_cut_with_a_note(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    huge = "word " * (MESSAGE_CHARS // 5 + 1000)
    stats = library.import_conversations([conversation("blob", ["a pasted log follows", huge, "thanks"])])
    assert stats.new == 1
    assert len(stats.notes) == 1
    assert "message 2" in stats.notes[0]
    assert f"{MESSAGE_CHARS:,}" in stats.notes[0]
    kept = library.get("blob").messages[1].text
    assert kept.startswith("word word")
    assert "cut by pastchats" in kept
    assert len(kept) < MESSAGE_CHARS + 100
