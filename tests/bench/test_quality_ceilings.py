"""The ceilings' arithmetic: the best any ordering could do with what it has to order."""

from __future__ import annotations

from bench.quality.ceilings import best_ndcg, best_recall


def test_recall_at_k_can_hold_no_more_evidence_than_k_places() -> None:
    assert best_recall(found=12, wanted=12, k=10) == 10 / 12
    assert best_recall(found=2, wanted=3, k=10) == 2 / 3
    assert best_recall(found=0, wanted=0, k=5) == 1.0  # a question with no evidence counts 1


def test_ndcg_is_perfect_only_when_every_gold_item_that_fits_was_found() -> None:
    assert best_ndcg(found=2, wanted=2, k=5) == 1.0
    assert best_ndcg(found=5, wanted=7, k=5) == 1.0
    assert 0 < best_ndcg(found=1, wanted=2, k=5) < 1
    assert best_ndcg(found=0, wanted=0, k=5) == 0.0
