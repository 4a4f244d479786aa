"""Coarse retrieval units: exchange windows, searched but never shown."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.search import SHIPPED
from storage.search.fusion import relative_similarity
from storage.stores.lance_store import UnitHit
from storage.units.passages import ChunkOptions, chunk_conversation
from storage.units.windows import MESSAGE, WINDOW, kind_of, windows
from tests.storage.helpers import conversation

QUEUE = conversation(
    "queue",
    [
        "We need a job queue for the thumbnail workers. Redis or RabbitMQ?",
        "RabbitMQ gives you acknowledgements and dead-letter exchanges out of the box.",
        "Fine, and why not Redis streams?",
        "Redis streams work too, but consumer groups need more care when a worker dies.",
        "Then we go with RabbitMQ for the thumbnail queue.",
    ],
    title="Thumbnail job queue",
)
UNITS = ChunkOptions(window_size=3, window_stride=2)


def test_windows_of_three_every_two_messages_cover_every_pair_of_neighbours() -> None:
    spans = [(w.first_index, w.last_index) for w in windows(QUEUE, 3, 2)]
    assert spans == [(0, 2), (2, 4)]
    first = next(windows(QUEUE, 3, 2))
    assert first.message_ids == ("queue-m0", "queue-m1", "queue-m2")
    assert first.text.splitlines()[1].startswith("Assistant: RabbitMQ gives you")


def test_unit_kinds_are_told_apart_by_their_chunk_ids() -> None:
    chunks = chunk_conversation(QUEUE, "model", UNITS)
    assert {kind_of(c.id): c.kind for c in chunks} == {MESSAGE: MESSAGE, WINDOW: WINDOW}
    assert sum(c.kind == MESSAGE for c in chunks) == len(QUEUE.messages)
    assert not [c for c in chunk_conversation(QUEUE, "model", ChunkOptions(window_size=0)) if c.kind != MESSAGE]


def test_search_over_coarse_units_shows_and_ranks_messages_only(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=UNITS)
    other = conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."])
    library.import_conversations([QUEUE, other])
    assert library.keywords.doc_count() == library.stats().chunks == 5 + 2 + 2 + 1
    fusion = replace(SHIPPED, window_weight=1.0)
    units = library.search_units("why RabbitMQ over Redis for the thumbnail queue", fusion=fusion)
    assert units
    assert all(kind_of(u.chunk_id) == MESSAGE and len(u.message_ids) == 1 for u in units)
    assert units[0].conversation_id == "queue"
    result = library.search("why RabbitMQ over Redis for the thumbnail queue", max_results=2, fusion=fusion)
    assert result.chats[0].uri == "queue"
    shown = [m.text for match in result.chats[0].matches for m in match.messages]
    assert shown
    assert all(text in {m.text for m in QUEUE.messages} for text in shown)


def test_a_window_far_less_similar_than_the_best_one_pulls_far_less() -> None:
    """Ranks 1 and 2 are nearly alike under RRF; cosine 0.52 against 0.30 is not (the corpus's Lisbon
    query: a Spanish-course window ranked second lifted its chat above the Lisbon chat)."""
    lisbon = UnitHit("lisbon-tripw0-2", "lisbon-trip", 0, 2, ("m0", "m1", "m2"), similarity=0.52)
    spanish = UnitHit("spanishw0-2", "spanish", 0, 2, ("m0", "m1", "m2"), similarity=0.26)
    negative = UnitHit("otherw0-2", "other", 0, 2, ("m0", "m1", "m2"), similarity=-0.1)
    factors = relative_similarity([lisbon, spanish, negative], 1.0)
    assert factors == {"lisbon-tripw0-2": 1.0, "spanishw0-2": 0.5, "otherw0-2": 0.0}
    assert relative_similarity([lisbon, spanish], 2.0) == {"lisbon-tripw0-2": 1.0, "spanishw0-2": 0.25}
    assert relative_similarity([lisbon, spanish], 0.0) is None  # off: windows pull by rank alone
    assert relative_similarity([], 1.0) is None


def test_windows_scored_from_the_message_hits_hold_what_their_messages_hold_together(tmp_path: Path) -> None:
    """No window search: a window holds the words of its messages' hits together, scores their BM25
    scores summed, and its messages no hit names join with their own ids."""
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=UNITS)
    other = conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."])
    library.import_conversations([QUEUE, other])
    engine = library.engine
    query = "workers acknowledgements"  # the title (every message's) holds neither
    ranking = engine.rank(query, limit=50, mode="keyword")
    # the first two messages each hold some of the words; the window (0, 2) holds them together and
    # brings its third message, which no hit names, along with its own id
    assert {cid for cid, _ in ranking.fused} >= {"queue\x1f0\x1f0", "queue\x1f1\x1f0", "queue\x1f2\x1f0"}
    assert ranking.units["queue\x1f2\x1f0"].message_ids == ()
    assert "queue\x1f2\x1f0" not in ranking.direct
    units = library.search_units(query, mode="keyword")
    named = {u.chunk_id: u.message_ids for u in units}
    assert named["queue\x1f2\x1f0"] == ("queue-m2",)
    assert named["queue\x1f0\x1f0"] == ("queue-m0",)
    result = library.search(query, max_results=2, mode="keyword")
    assert result.chats[0].uri == "queue"
    shown = [m for match in result.chats[0].matches for m in match.message_ids]
    assert shown
    assert "" not in shown


def test_windows_from_the_message_hits_need_no_window_search(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=UNITS)
    library.import_conversations([QUEUE])
    reader = library.keywords.reader

    class Counted:
        """A searcher that counts its Tantivy searches."""

        searches = 0

        def __init__(self) -> None:
            self.searcher = reader()

        def search(self, *args: Any, **named: Any) -> Any:
            Counted.searches += 1
            return self.searcher.search(*args, **named)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.searcher, name)

    library.keywords.reader = Counted  # type: ignore[method-assign,assignment]
    units = library.search_units("workers acknowledgements")
    assert units
    assert all(kind_of(u.chunk_id) == MESSAGE and len(u.message_ids) == 1 for u in units)
    # the messages only: no identifiers to look for word for word, no windows, no file touched by these words
    assert Counted.searches == 1


def test_a_store_without_windows_gets_no_windows_from_the_message_hits(tmp_path: Path) -> None:
    plain = Library.open(tmp_path / "store", embedder=HashEmbedder(), chunk_options=ChunkOptions(window_size=0))
    plain.import_conversations([QUEUE])
    assert not plain.keywords.holds(WINDOW)
    ranking = plain.engine.rank("workers acknowledgements", mode="keyword")
    assert set(ranking.units) == set(ranking.direct)  # no message joined through a window
