"""Reciprocal Rank Fusion: order by the sum of 1/(k + rank) over the lists a document appears in."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from operator import itemgetter
from typing import TypeVar

K = 60  # the textbook constant (Cormack, Clarke & Büttcher 2009); the engine's choice is `search.Fusion.k`

T = TypeVar("T", bound=Hashable)


def rrf(rankings: Sequence[Sequence[T]], k: int = K, weights: Sequence[float] | None = None) -> list[tuple[T, float]]:
    """Fuse ranked lists (best first, ranks from 1). The values only order; they are not relevance."""
    scores: dict[T, float] = {}
    for position, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[position]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    # Ties keep the order of first appearance (dicts keep insertion order; sorted is stable).
    return sorted(scores.items(), key=itemgetter(1), reverse=True)
