"""The benchmark metrics against cases worked out by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench.quality.embed_cache import CachingEmbedder
from bench.quality.locomo import normalise_evidence, parse_date, session_of
from bench.quality.longmemeval import parse_date as lme_date
from bench.quality.metrics import (
    expand_units,
    ndcg_any,
    rank_sessions,
    recall_all,
    recall_any,
    session_recall,
    turn_recall,
)
from storage.embedding.embedder import HashEmbedder


def test_units_expand_to_turns_in_rank_order_each_turn_once() -> None:
    assert expand_units([["a", "b"], ["b", "c"], ["d"]]) == ["a", "b", "c", "d"]


def test_turn_recall_counts_k_in_turns_so_a_multi_turn_unit_uses_up_k() -> None:
    turns = expand_units([["x1", "x2", "x3"], ["e1"], ["e2"]])
    assert turn_recall(turns, ["e1", "e2"], 3) == 0.0
    assert turn_recall(turns, ["e1", "e2"], 4) == 0.5
    assert turn_recall(turns, ["e1", "e2"], 5) == 1.0


def test_turn_recall_of_a_question_without_evidence_is_one() -> None:
    assert turn_recall(["a"], [], 5) == 1.0


def test_evidence_ids_appearing_twice_count_once() -> None:
    assert turn_recall(["D1:1", "D1:2"], ["D1:1", "D1:1", "D2:9"], 2) == 0.5


def test_sessions_are_ranked_at_their_best_turn_which_extends_k_to_k_distinct_sessions() -> None:
    turns = ["A1", "A2", "B1", "A3", "C1"]
    sessions = rank_sessions(turns, lambda t: t[0])
    assert sessions == ["A", "B", "C"]
    # Five turns hold three sessions: at k=3 sessions, C is in even though it is the fifth turn.
    assert recall_any(sessions, ["C"], 2) == 0.0
    assert recall_any(sessions, ["C"], 3) == 1.0


def test_recall_any_all_and_session_fraction() -> None:
    sessions = ["X", "G1", "Y", "G2"]
    assert recall_any(sessions, ["G1", "G2"], 2) == 1.0
    assert recall_all(sessions, ["G1", "G2"], 2) == 0.0
    assert recall_all(sessions, ["G1", "G2"], 4) == 1.0
    assert session_recall(sessions, ["G1", "G2"], 2) == 0.5
    assert session_recall(sessions, [], 2) == 1.0


def test_ndcg_uses_the_official_discount() -> None:
    # Upstream DCG: rel1 + sum_{i>=2} rel_i / log2(i). Gold at ranks 2 and 4: 1/1 + 1/2 = 1.5;
    # ideal (two gold first): 1 + 1/log2(2) = 2.
    assert ndcg_any(["X", "G1", "Y", "G2"], ["G1", "G2"], 5) == pytest.approx(0.75)
    assert ndcg_any(["X", "G1", "Y", "G2"], ["G1", "G2"], 2) == pytest.approx(0.5)
    assert ndcg_any(["G1", "X", "G2"], ["G1", "G2"], 5) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert ndcg_any(["G1", "G2"], ["G1", "G2"], 10) == 1.0
    assert ndcg_any(["X", "Y"], ["G1"], 10) == 0.0


def test_one_gold_session_at_rank_three_scores_one_over_log2_3() -> None:
    assert ndcg_any(["X", "Y", "G"], ["G"], 5) == pytest.approx(1 / math.log2(3))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ("D1:3",)),
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D9:1 D4:4 D4:6"], ("D9:1", "D4:4", "D4:6")),
        (["D:11:26"], ("D11:26",)),
        (["D2:1", "D2:1"], ("D2:1",)),
        (["nonsense"], ()),
        ([], ()),
    ],
)
def test_malformed_locomo_evidence_is_repaired(raw: list[str], expected: tuple[str, ...]) -> None:
    ids, notes = normalise_evidence(raw)
    assert ids == expected
    assert bool(notes) == (raw not in (["D1:3"], ["D2:1", "D2:1"], []))


def test_dates_parse_to_utc() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("12:09 am on 1 January, 2024") == datetime(2024, 1, 1, 0, 9, tzinfo=UTC)
    assert lme_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert session_of("D12:4") == "D12"


def test_the_embedding_cache_serves_repeats_without_the_model(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    inner = HashEmbedder(dim=16)
    first = CachingEmbedder(inner, path)
    vectors = first.embed_documents(["alpha beta", "gamma", "alpha beta"])
    assert (first.hits, first.misses) == (1, 2)
    first.close()
    again = CachingEmbedder(inner, path)
    assert np.array_equal(again.embed_documents(["gamma", "alpha beta"]), vectors[[1, 0]])
    assert (again.hits, again.misses) == (2, 0)
    again.close()
