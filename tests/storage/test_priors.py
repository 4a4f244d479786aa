"""The measured signals beside the legs (off by default): query form, recency and importance."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from storage.chunking import ChunkOptions, chunk_conversation
from storage.embedder import HashEmbedder
from storage.lance_store import UnitHit
from storage.library import Library
from storage.priors import asks_for_latest, content_text, importance, recency_prior
from storage.search import SHIPPED
from storage.units import WINDOW
from tests.storage.helpers import conversation


def test_the_content_form_drops_question_scaffolding_and_meta_words_but_keeps_the_subject() -> None:
    assert content_text("What did we discuss about the RabbitMQ queue?") == "about the RabbitMQ queue"
    assert content_text("what did we discuss?") == "what did we discuss?"  # nothing left: the query as is


def test_only_queries_that_ask_for_the_latest_state_get_the_recency_lean() -> None:
    assert asks_for_latest("which queue did we end up choosing")
    assert asks_for_latest("what is my current highest score")
    assert not asks_for_latest("why RabbitMQ over Redis")


def test_recency_leans_towards_the_newer_chat_without_sorting_by_date() -> None:
    units = {
        "old": UnitHit("old", "a", 0, 0, ("a0",)),
        "new": UnitHit("new", "b", 0, 0, ("b0",)),
    }
    times = {"a": datetime(2024, 1, 1, tzinfo=UTC), "b": datetime(2025, 1, 1, tzinfo=UTC)}
    close = recency_prior([("old", 0.10), ("new", 0.095)], units, times, 0.1)
    assert [cid for cid, _ in close] == ["new", "old"]
    far = recency_prior([("old", 0.20), ("new", 0.10)], units, times, 0.1)
    assert [cid for cid, _ in far] == ["old", "new"]


def test_importance_counts_length_and_a_stated_decision() -> None:
    short, decided = conversation("c", ["ok", "We decided to go with RabbitMQ. " + "detail " * 150]).messages
    assert importance([short]) < 0.1
    assert importance([decided]) == 1.0


def test_the_title_above_a_window_is_embedded_but_not_keyword_indexed() -> None:
    chat = conversation("q", ["Redis or RabbitMQ?", "RabbitMQ.", "Why?"], title="Thumbnail job queue")
    model = ChunkOptions(window_size=3, window_vectors="model")  # derived windows embed no text of their own
    plain = [c for c in chunk_conversation(chat, "m", model) if c.kind == WINDOW]
    titled = [c for c in chunk_conversation(chat, "m", replace(model, window_title=True)) if c.kind == WINDOW]
    assert titled[0].embed_text == "Thumbnail job queue\n" + plain[0].embed_text
    assert titled[0].text == plain[0].text


def test_every_signal_switched_on_still_ranks_the_answering_chat_first(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=ChunkOptions(window_size=3))
    library.import_conversations(
        [
            conversation("queue", ["Redis or RabbitMQ for the thumbnail queue?", "We decided on RabbitMQ."]),
            conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
        ]
    )
    fusion = replace(SHIPPED, window_weight=0.7, query_form="mean", recency=0.3, importance=0.3)
    units = library.search_units("what queue did we end up choosing now", fusion=fusion)
    assert units[0].conversation_id == "queue"
