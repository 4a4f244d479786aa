"""Tool output and acknowledgements get no vectors, cost no model time, and are still found by keyword."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder, Vectors
from storage.library import Library
from storage.models import Conversation, Message, Role
from storage.search import SHIPPED
from storage.units.passages import NO_EMBEDDING, ChunkOptions, chunk_conversation, embeds, is_trivial
from storage.units.windows import WINDOW

BASE = datetime(2025, 3, 1, tzinfo=UTC)
LOG = "\n".join(f"12:0{i}:33 ERROR pool exhausted ticket=QX-{4711 + i} retry in 30s" for i in range(8))


class RecordingEmbedder(HashEmbedder):
    """The test embedder, remembering every document text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return super().embed_documents(texts)


def chat(cid: str, turns: list[tuple[Role, str]]) -> Conversation:
    messages = [
        Message(id=f"{cid}-m{i}", index=i, role=role, text=text, created_at=BASE + timedelta(minutes=i))
        for i, (role, text) in enumerate(turns)
    ]
    return Conversation(
        id=cid,
        source="claude-code",
        title=f"chat {cid}",
        created_at=BASE,
        updated_at=BASE + timedelta(hours=1),
        messages=messages,
    )


DEBUG = chat(
    "debug",
    [
        ("user", "the worker keeps failing with a connection pool error, can you look?"),
        ("tool", LOG),
        ("assistant", "The database pool is too small for the number of workers; raise max_connections."),
        ("user", "thanks!"),
    ],
)
OTHER = chat("other", [("user", "a recipe for rye bread with caraway"), ("assistant", "Mix rye flour, water, salt.")])


@pytest.mark.parametrize("text", ["ok", "Thanks!", "perfect, that worked", "got it 👍", "Yes please.", "  ", "lgtm"])
def test_acknowledgements_are_trivial(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize(
    "text", ["No, I moved to Berlin in 2019", "thanks for the nginx config", "ok but port 8096 is taken", "42"]
)
def test_a_short_message_with_content_is_not_trivial(text: str) -> None:
    assert not is_trivial(text)


def test_tool_output_and_acknowledgements_are_not_embedded_but_everything_else_is() -> None:
    chunks = chunk_conversation(DEBUG, "m")
    by_message = {chunk.first_index: chunk for chunk in chunks}
    assert [embeds(m) for m in DEBUG.messages] == [True, False, True, False]
    assert by_message[1].embed_key == by_message[3].embed_key == NO_EMBEDDING
    assert by_message[1].text == LOG.strip()  # the text is kept whole for keyword search and display
    assert by_message[0].embed_key
    assert by_message[2].embed_key


def test_an_exchange_window_reads_neither_the_log_nor_the_acknowledgement() -> None:
    windows = [chunk for chunk in chunk_conversation(DEBUG, "m") if chunk.kind == WINDOW]
    assert [(w.first_index, w.last_index) for w in windows] == [(0, 2)]  # 2-3 would be one line: none
    assert "QX-47" not in windows[0].text  # the log is keyword-searchable as its own message
    assert windows[0].text.splitlines()[1].startswith("Assistant: The database pool")
    chunks = chunk_conversation(DEBUG, "m")
    messages = {chunk.first_index: chunk.embed_key for chunk in chunks if chunk.kind != WINDOW}
    assert windows[0].mean_of == (messages[0], messages[2])  # its vector: the two messages' alone
    (embedded,) = [c for c in chunk_conversation(DEBUG, "m", ChunkOptions(window_vectors="model")) if c.kind == WINDOW]
    assert "QX-47" not in embedded.embed_text
    assert embedded.embed_text.splitlines()[1].startswith("Assistant: The database pool")


def test_a_reply_to_tool_output_is_embedded_without_the_log_lines_before_it() -> None:
    reply = chunk_conversation(DEBUG, "m")[2]
    assert reply.first_index == 2
    assert "ERROR" not in reply.embed_text
    assert reply.embed_text.startswith("Assistant: The database pool")


def test_keyword_only_passages_cost_no_model_time_and_are_found_by_keyword_not_by_vector(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    library = Library.open(tmp_path / "store", embedder=embedder)
    stats = library.import_conversations([DEBUG, OTHER])
    # four messages; the two chats' exchange windows are derived from their messages' vectors (the debug
    # chat's from its question and answer: not the log, not the acknowledgement)
    assert (stats.chunks_embedded, stats.chunks_reused) == (4, 0)
    assert len(embedder.texts) == 4
    assert not any("QX-4711" in text or text.endswith("thanks!") for text in embedder.texts)
    assert library.pending_embeddings() == 0
    hits = library.search("QX-4716", mode="keyword").chats
    assert [hit.uri for hit in hits] == ["debug"]
    assert library.store.build_matrix() == 4 + 2  # only units with vectors are scanned by the vector leg
    # the vector leg alone: a window spanning the log would bring its messages in as the window's members
    alone = replace(SHIPPED, window_weight=0.0)
    vector_units = library.search_units("ERROR pool exhausted ticket", limit=20, mode="vector", fusion=alone)
    assert all(unit.first_index not in (1, 3) for unit in vector_units if unit.conversation_id == "debug")


def test_an_import_that_defers_embedding_leaves_nothing_waiting_for_keyword_only_passages(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    library = Library.open(tmp_path / "store", embedder=embedder)
    library.import_conversations([DEBUG, OTHER], embed=False)
    assert embedder.texts == []
    assert library.pending_embeddings() == 4 + 2  # the messages with content and the two windows
    assert [hit.uri for hit in library.search("QX-4712", mode="keyword").chats] == ["debug"]
    assert library.embed_pending() == 4 + 2
    assert library.pending_embeddings() == 0
    assert [hit.uri for hit in library.search("QX-4712", mode="keyword").chats] == ["debug"]
    assert library.search("database pool max_connections", mode="vector").chats[0].uri == "debug"
