"""Reciprocal Rank Fusion: order by the sum of 1/(k + rank) over the lists a document appears in."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

# Cormack et al. chose 60 for fusing many TREC runs 1000 deep. Fusing two legs 100 deep, one of them a
# small embedding model, 60 lets a chunk that both legs rank middling (15th and 15th) beat one that a
# leg ranks first; 10 keeps first places first. Measured on LoCoMo and LongMemEval: docs/BENCHMARKS.md.
K = 10

T = TypeVar("T", bound=Hashable)


def rrf(rankings: Sequence[Sequence[T]], k: int = K, weights: Sequence[float] | None = None) -> list[tuple[T, float]]:
    """Fuse ranked lists (best first, ranks from 1). The values only order; they are not relevance."""
    scores: dict[T, float] = {}
    for position, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[position]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    # Ties keep the order of first appearance (dicts keep insertion order; sorted is stable).
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
