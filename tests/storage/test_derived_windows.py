"""Exchange windows whose vectors are derived from their messages' vectors: no model run, same store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from storage.embedding.embedder import HashEmbedder, Vectors
from storage.library import Library
from storage.units.passages import DEFAULT_OPTIONS, NO_EMBEDDING, ChunkOptions, chunk_conversation
from storage.units.windows import MESSAGE, WINDOW
from storage.writing.ingest import mean_vector
from tests.storage.helpers import conversation
from tests.storage.test_keyword_only_passages import DEBUG, RecordingEmbedder

DERIVED = ChunkOptions(window_vectors="words")
MODEL = ChunkOptions(window_vectors="model")
LONG_ANSWER = " ".join(f"Sentence {i} on replica lag and the vacuum schedule of the orders table." for i in range(16))
DB = conversation(
    "db",
    [
        "Why does the replica lag behind every night?",
        LONG_ANSWER,  # two passages: the window reads its first
        "So the vacuum of the orders table is the cause?",
        "Yes: move it to the afternoon, when the write load is low.",
        "Done, and the lag is gone.",
    ],
)
BREAD = conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day, at room temperature."])


def rows(library: Library) -> dict[str, dict[str, object]]:
    table = library.store.chunks.search().select(["id", "kind", "embed_key", "vector", "pending"]).limit(None)
    return {row["id"]: row for row in table.to_arrow().to_pylist()}


def expected(library: Library, window_id: str) -> Vectors:
    """The window's vector as its definition says: its messages' first passages, weighted by the words
    of each message the window reads, from the vectors LanceDB holds."""
    stored = rows(library)
    cid, span = window_id.rsplit("\x1f", 1)
    first, last = (int(n) for n in span[1:].split("-"))
    chat = library.get(cid)
    members = [(f"{cid}\x1f{i}\x1f0", min(len(chat.messages[i].text.split()), 80)) for i in range(first, last + 1)]
    members = [(chunk_id, words) for chunk_id, words in members if stored[chunk_id]["embed_key"] != NO_EMBEDDING]
    vectors = np.stack([np.asarray(stored[chunk_id]["vector"], np.float32) for chunk_id, _ in members])
    mean = np.average(vectors, axis=0, weights=[words for _, words in members])
    return (mean / np.linalg.norm(mean)).astype(np.float32)


def windows_of(library: Library, cid: str | None = None) -> dict[str, dict[str, object]]:
    return {
        key: row
        for key, row in rows(library).items()
        if row["kind"] == WINDOW and (cid is None or key.startswith(f"{cid}\x1f"))
    }


def test_derived_windows_are_the_default_and_an_unknown_recipe_is_refused() -> None:
    assert DEFAULT_OPTIONS.window_vectors == "words"
    with pytest.raises(ValueError, match="window_vectors must be one of model, mean, words"):
        ChunkOptions(window_vectors="median")


def test_a_derived_window_names_its_messages_first_passages_and_the_words_it_reads() -> None:
    chunks = chunk_conversation(DB, "m", DERIVED)
    first_passage = {c.first_index: c.embed_key for c in reversed(chunks) if c.kind == MESSAGE}
    assert sum(c.first_index == 1 for c in chunks if c.kind == MESSAGE) == 2
    window = next(c for c in chunks if c.kind == WINDOW)
    assert (window.first_index, window.last_index) == (0, 2)
    assert window.mean_of == (first_passage[0], first_passage[1], first_passage[2])
    assert window.mean_weights == (8.0, 80.0, 10.0)  # a window reads at most 80 words of a message
    assert window.embed_text == ""
    assert not window.model_text
    assert window.text.startswith("User: Why does the replica lag")  # the keyword side is unchanged
    # the key follows the members: a changed message changes the windows holding it, and only those
    edited = conversation("db", [*[m.text for m in DB.messages[:4]], "Done, the lag is gone for good."])
    before = {c.id: c.embed_key for c in chunks if c.kind == WINDOW}
    after = {c.id: c.embed_key for c in chunk_conversation(edited, "m", DERIVED) if c.kind == WINDOW}
    assert before.keys() == after.keys()
    assert [before[key] == after[key] for key in before] == [True, False]
    model_windows = [c for c in chunk_conversation(DB, "m", MODEL) if c.kind == WINDOW]
    assert all(c.model_text and not c.mean_of for c in model_windows)


def test_a_window_leaves_out_the_messages_that_get_no_vector() -> None:
    window = next(c for c in chunk_conversation(DEBUG, "m", DERIVED) if c.kind == WINDOW)
    readable = [c for c in chunk_conversation(DEBUG, "m", DERIVED) if c.kind == MESSAGE and c.first_index in (0, 2)]
    assert window.mean_of == tuple(c.embed_key for c in readable)  # not the log (1), not "thanks!" (3)


def test_an_import_embeds_only_messages_and_derives_each_window_from_the_stored_vectors(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    library = Library.open(tmp_path / "store", embedder=embedder, chunk_options=DERIVED)
    stats = library.import_conversations([DB, BREAD, DEBUG])
    passages = [c for chat in (DB, BREAD, DEBUG) for c in chunk_conversation(chat, "m", DERIVED) if c.model_text]
    assert stats.chunks_embedded == len(embedder.texts) == len(passages) == 6 + 2 + 2
    assert sorted(embedder.texts) == sorted(c.embed_text for c in passages)  # messages' passages only
    windows = windows_of(library)
    assert len(windows) == 2 + 1 + 1
    for window_id, row in windows.items():
        assert not row["pending"]
        assert np.allclose(row["vector"], expected(library, window_id), atol=1e-6)
    assert library.store.build_matrix() == len(passages) + len(windows)  # the vector leg scans them
    assert library.search("replica lag vacuum schedule", mode="vector").chats[0].uri == "db"


def test_a_window_waits_for_its_messages_and_is_derived_when_they_are_embedded(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    direct = Library.open(tmp_path / "direct", embedder=HashEmbedder(), chunk_options=DERIVED)
    direct.import_conversations([DB, BREAD])
    library = Library.open(tmp_path / "later", embedder=embedder, chunk_options=DERIVED)
    library.import_conversations([DB, BREAD], embed=False)
    assert embedder.texts == []
    assert all(row["pending"] for row in windows_of(library).values())
    assert library.pending_embeddings() == 6 + 2 + 3
    assert library.embed_pending(batch=3) == 6 + 2 + 3  # one chat a batch: its windows with its messages
    assert len(embedder.texts) == 6 + 2
    assert library.pending_embeddings() == 0
    ours, theirs = rows(library), rows(direct)
    assert ours.keys() == theirs.keys()
    assert all(np.allclose(ours[key]["vector"], theirs[key]["vector"]) for key in ours)


def test_messages_embedded_by_an_earlier_import_let_windows_be_derived_without_waiting(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    library = Library.open(tmp_path / "store", embedder=embedder, chunk_options=DERIVED)
    three = [*[m.text for m in BREAD.messages], "And the acetone smell, is it a problem?"]
    library.import_conversations([conversation("bread", three)])
    texts = len(embedder.texts)
    five = conversation("bread", [*three, "Only that it is hungry: feed it more often.", "Will do, twice a day."])
    library.import_conversations([five], embed=False)
    assert len(embedder.texts) == texts
    windows = windows_of(library, "bread")
    # (0-2) is derived at once from the vectors stored by the first import; (2-4) waits for 3 and 4
    assert {key.rsplit("\x1f", 1)[1]: row["pending"] for key, row in windows.items()} == {"w0-2": False, "w2-4": True}
    assert library.pending_embeddings() == 2 + 1
    assert library.embed_pending() == 3
    assert len(embedder.texts) == texts + 2  # the two new messages only
    for window_id in windows_of(library, "bread"):
        assert np.allclose(rows(library)[window_id]["vector"], expected(library, window_id), atol=1e-6)


def test_re_import_and_delete_leave_no_stale_window(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=DERIVED)
    library.import_conversations([DB, BREAD])
    shorter = conversation("db", [m.text for m in DB.messages[:3]])
    library.import_conversations([shorter])
    assert sorted(k.rsplit("\x1f", 1)[1] for k in windows_of(library, "db")) == ["w0-2"]
    assert np.allclose(rows(library)["db\x1fw0-2"]["vector"], expected(library, "db\x1fw0-2"), atol=1e-6)
    assert library.delete(["db"]) == 1
    assert windows_of(library, "db") == {}
    assert library.store.build_matrix() == 2 + 1
    assert library.search("sourdough acetone").chats[0].uri == "bread"


def test_a_store_whose_windows_the_model_embedded_keeps_them_until_their_chat_changes(tmp_path: Path) -> None:
    home = tmp_path / "store"
    old = Library.open(home, embedder=HashEmbedder(), chunk_options=MODEL)
    old.import_conversations([DB, BREAD])
    model_windows = {key: row["vector"] for key, row in windows_of(old).items()}
    embedder = RecordingEmbedder()
    library = Library.open(home, embedder=embedder, chunk_options=DERIVED)
    assert library.import_conversations([DB, BREAD]).unchanged == 2  # nothing re-derived, nothing embedded
    assert embedder.texts == []
    assert {key: row["vector"] for key, row in windows_of(library).items()} == model_windows
    assert library.search("replica lag vacuum schedule").chats[0].uri == "db"
    edited = conversation("bread", [BREAD.messages[0].text, "Feed it twice a day, and keep it warm."])
    library.import_conversations([edited])
    assert len(embedder.texts) == 1  # the changed message; its window is derived
    assert embedder.texts[0].endswith("Assistant: Feed it twice a day, and keep it warm.")
    (bread_window,) = windows_of(library, "bread")
    assert np.allclose(rows(library)[bread_window]["vector"], expected(library, bread_window), atol=1e-6)
    assert {key: row["vector"] for key, row in windows_of(library, "db").items()} == {
        key: vector for key, vector in model_windows.items() if key.startswith("db\x1f")
    }


def test_the_mean_of_unit_vectors_is_a_unit_vector_leaning_to_the_heavier_member() -> None:
    a, b = np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)
    mean = mean_vector([a, b], [3.0, 1.0])
    assert np.isclose(np.linalg.norm(mean), 1.0)
    assert mean[0] == 3 * mean[1]
    assert mean.dtype == np.float32
