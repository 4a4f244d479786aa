"""The benchmarks' official metrics, over ranked turn ids (best first).

Retrieval units may cover several turns: `expand_units` flattens them into one ranked turn list, so
that k is always counted in turns (LoCoMo) or in distinct sessions (LongMemEval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from statistics import fmean, median
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def expand_units(units: Iterable[Sequence[T]]) -> list[T]:
    """Ranked units -> ranked turns: each unit's turns in order, a turn kept at its first (best) place."""
    return list(dict.fromkeys(turn for unit in units for turn in unit))


def turn_recall(ranked_turns: Sequence[T], evidence: Iterable[T], k: int) -> float:
    """LoCoMo: the fraction of the evidence turns among the first k turns; no evidence counts 1."""
    wanted = set(evidence)
    if not wanted:
        return 1.0
    return len(wanted.intersection(ranked_turns[:k])) / len(wanted)


def rank_sessions(ranked_turns: Sequence[T], session_of: Callable[[T], str]) -> list[str]:
    """Map turn hits to sessions, each at its best turn's place.

    Taking the first k of this list is upstream's "extend k until k distinct sessions".
    """
    return list(dict.fromkeys(session_of(turn) for turn in ranked_turns))


def session_recall(ranked_sessions: Sequence[str], gold: Iterable[str], k: int) -> float:
    """The fraction of the evidence sessions among the first k sessions; no evidence counts 1."""
    wanted = set(gold)
    if not wanted:
        return 1.0
    return len(wanted.intersection(ranked_sessions[:k])) / len(wanted)


def recall_any(ranked_sessions: Sequence[str], gold: Iterable[str], k: int) -> float:
    return float(any(session in ranked_sessions[:k] for session in gold))


def recall_all(ranked_sessions: Sequence[str], gold: Iterable[str], k: int) -> float:
    top = set(ranked_sessions[:k])
    return float(all(session in top for session in gold))


def dcg(relevances: Sequence[float]) -> float:
    """Upstream's DCG (LongMemEval eval_utils): rel_1 + sum_{i>=2} rel_i / log2(i).

    Note the first two places both weigh 1; this is the official formula, kept so numbers compare.
    """
    if not relevances:
        return 0.0
    return relevances[0] + sum(rel / math.log2(i) for i, rel in enumerate(relevances[1:], start=2))


def ndcg_any(ranked_sessions: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance nDCG@k over distinct sessions; the ideal ranks every gold session first."""
    wanted = set(gold)
    ideal = dcg([1.0] * min(k, len(wanted)))
    if ideal == 0:
        return 0.0
    return dcg([1.0 if s in wanted else 0.0 for s in ranked_sessions[:k]]) / ideal


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return fmean(items) if items else None


def latency_summary(seconds: Sequence[float]) -> dict[str, float | int | None]:
    if not seconds:
        return {"n": 0, "median_ms": None, "p90_ms": None}
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
    return {"n": len(ordered), "median_ms": median(ordered) * 1000, "p90_ms": p90 * 1000}
