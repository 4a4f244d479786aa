"""Round two's query-time signals (off by default): feedback words, common terms, chat diversity, split
questions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from storage.embedder import HashEmbedder
from storage.evidence import TermWeights
from storage.expansion import (
    ExpandedWeights,
    agreement_boost,
    candidate_stems,
    common_term_boosts,
    diversified,
    feedback_terms,
    sub_queries,
)
from storage.library import Library
from storage.query import analyse
from storage.search import SHIPPED
from tests.storage.helpers import conversation


def test_feedback_words_are_the_ones_good_units_share_and_the_query_lacks() -> None:
    query = analyse("thumbnail queue")
    stems = [
        candidate_stems("RabbitMQ keeps the thumbnail jobs durable"),
        candidate_stems("RabbitMQ acknowledgements, and the jobs survive a restart"),
        candidate_stems("unrelated: my sourdough"),
    ]
    freqs = {s: 3 for found in stems for s in found} | {"sourdough": 1}
    terms = feedback_terms(query, stems, [1.0, 0.8, 0.1], 1000, freqs, 3)
    assert list(terms)[:2] == ["rabbitmq", "job"]  # in both good units
    assert "thumbnail" not in terms  # the query says it already
    assert "sourdough" not in terms  # in one unit of the store only
    assert max(terms.values()) == 1.0


def test_feedback_words_leave_out_stop_words_meta_words_and_numbers() -> None:
    assert candidate_stems("We talked about the 2023 budget again, it's 42 euros") == ["budget", "euro"]


def test_a_query_term_most_units_hold_is_weighed_down_unless_it_is_all_the_query_has() -> None:
    weights = TermWeights({"caroline": 0.7, "adopt": 6.0})
    assert common_term_boosts(weights, 0.2, 0.3) == {"caroline": 0.3}
    assert common_term_boosts(TermWeights({"caroline": 0.7}), 0.2, 0.3) == {}
    assert common_term_boosts(weights, 0.0, 0.3) == {}


def test_diversity_lets_other_chats_in_without_reordering_a_chat_or_the_chats_best_units() -> None:
    fused = [("a1", 1.0), ("a2", 0.9), ("a3", 0.8), ("b1", 0.7), ("c1", 0.5)]
    chats = {cid: cid[0] for cid, _ in fused}
    order = [cid for cid, _ in diversified(fused, chats, 0.4)]
    assert order == ["a1", "b1", "a2", "c1", "a3"]
    assert diversified(fused, chats, 0.0) == fused


def test_a_chat_more_legs_find_near_their_top_rises_and_keeps_its_own_order() -> None:
    fused = [("a1", 1.0), ("b1", 0.9), ("b2", 0.5)]
    chats = {"a1": "a", "b1": "b", "b2": "b"}
    order = agreement_boost(fused, chats, [{"a", "b"}, {"b"}, {"b"}], 0.5)
    assert [cid for cid, _ in order] == ["b1", "a1", "b2"]
    assert agreement_boost(fused, chats, [{"b"}], 0.0) == fused


def test_feedback_words_never_make_a_hit_count_less_than_the_query_words_it_holds() -> None:
    query = TermWeights({"thumbnail": 4.0, "queue": 2.0})
    weights = ExpandedWeights(query, TermWeights({"rabbitmq": 1.5}))
    assert weights.coverage("the thumbnail queue") == 1.0
    assert weights.coverage("a queue") == query.coverage("a queue")
    assert weights.coverage("a queue in RabbitMQ") > query.coverage("a queue in RabbitMQ")


def test_feedback_brings_in_a_unit_that_shares_the_answers_words_but_none_of_the_querys(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(
        [
            conversation(
                "queue",
                [
                    "Which thumbnail queue should we use?",
                    "RabbitMQ: durable queues, acknowledgements and retries for the thumbnail jobs.",
                ],
            ),
            conversation("broker", ["Set up RabbitMQ with durable acknowledgements and retries", "Done."], day=1),
            conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=2),
            conversation("garden", ["Tomatoes need durable stakes", "Use bamboo."], day=3),
        ]
    )
    plain = library.search_units("thumbnail queue", mode="keyword")
    fed = library.search_units("thumbnail queue", mode="keyword", fusion=replace(SHIPPED, feedback_terms=5))
    assert "broker" not in {u.conversation_id for u in plain}
    assert fed[0].conversation_id == "queue"
    assert "broker" in {u.conversation_id for u in fed}
    assert "bread" not in {u.conversation_id for u in fed}


def test_a_question_about_two_people_is_split_into_one_question_about_each() -> None:
    assert sub_queries("What subject have Caroline and Melanie both painted?") == [
        "What subject have Caroline both painted?",
        "What subject have Melanie both painted?",
    ]
    assert sub_queries("payment-service and auth-service errors") == ["payment-service errors", "auth-service errors"]


def test_a_thing_that_belongs_to_the_first_keeps_the_first_in_its_question() -> None:
    assert sub_queries("What types of pottery have Melanie and her kids made?") == [
        "What types of pottery have Melanie made?",
        "What types of pottery have Melanie kids made?",
    ]


def test_two_things_that_open_alike_are_each_taken_whole() -> None:
    assert sub_queries("Which came first, the volleyball league or the charity 5K run?") == [
        "Which came first, the volleyball league",
        "Which came first, the charity 5K run?",
    ]
    assert sub_queries("How many cuisines have I learned to cook or tried out this year?") == [
        "How many cuisines have I learned to cook",
        "How many cuisines have I tried out this year?",
    ]


def test_two_clauses_are_split_and_the_second_keeps_the_first_clauses_names() -> None:
    assert sub_queries("What did Caroline buy and why did she return it?") == [
        "What did Caroline buy",
        "why did she return it? Caroline",
    ]


def test_a_question_that_joins_nothing_is_not_split() -> None:
    assert sub_queries("what did we choose for the queue and why?") == []
    assert sub_queries("rock and roll") == ["rock", "roll"]  # a content word each side is all it asks
    assert sub_queries("and then what") == []
    assert sub_queries("the queue") == []


def test_a_split_question_finds_each_things_chat_and_keeps_the_whole_questions_best_first(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    library.import_conversations(
        [
            conversation("both", ["Caroline and Melanie painted a sunset together", "Lovely."]),
            conversation("caroline", ["Caroline painted the lake at dawn", "Nice."], day=1),
            conversation("melanie", ["Melanie painted her dog", "Cute."], day=2),
            conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=3),
        ]
    )
    query = "what have Caroline and Melanie painted"
    for merge in ("interleave", "max", "rrf"):
        split = library.search_units(query, mode="keyword", fusion=replace(SHIPPED, split_merge=merge))
        chats = [u.conversation_id for u in split]
        assert chats[0] == "both", merge
        assert {"caroline", "melanie"} <= set(chats), merge
        assert "bread" not in chats, merge
    # a question that joins nothing ranks as without the field
    alone = "what have they painted"
    with_field = library.search_units(alone, mode="keyword", fusion=replace(SHIPPED, split_merge="max"))
    assert [u.chunk_id for u in with_field] == [u.chunk_id for u in library.search_units(alone, mode="keyword")]
