"""How the legs' rankings become one: weighted Reciprocal Rank Fusion, then the boosts that ship.

Each score is the sum of weight × factor / (k + rank) over the lists a unit appears in (Cormack, Clarke &
Büttcher 2009). The values only order; they are not relevance (`storage.evidence` says how good a match is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from storage.stores.lance_store import UnitHit
from storage.units.windows import message_chunk_id

SCORE = itemgetter(1)  # of a (chunk id, score) pair: the sort key of every fused list (a lambda's calls cost more)

Fused = list[tuple[str, float]]  # (chunk id, score), best first


@dataclass(frozen=True)
class Fusion:
    """The fusion's knobs that the quality harness turns: `SHIPPED` is what ships, each value measured on
    LoCoMo and LongMemEval (`python -m bench.quality`); `PLAIN_RRF` is the textbook baseline it is measured against."""

    # Cormack et al. chose k = 60 for fusing many TREC runs 1,000 deep. Fusing two legs 100 deep, one a
    # small embedding model, 60 lets a chunk both legs rank middling (15th and 15th) beat one a leg ranks
    # first; 10 keeps first places first. LoCoMo R@5 53.7 -> 60.8, R@10 61.9 -> 72.8.
    k: int = 10
    # With identifiers (TypeError, payment-service) exact words beat meaning: the keyword leg counts more.
    identifier_keyword_weight: float = 2.0
    # A unit in a chat that matches strongly elsewhere is more likely the one meant: each unit gains this
    # share of its chat's best fused score. LoCoMo R@5 60.8 -> 64.2, R@10 72.8 -> 76.2.
    chat_boost: float = 0.6
    # A keyword hit counts fully once it holds this share of the query's (idf-weighted) words, less in
    # proportion below: hits on common words alone no longer bury a strong semantic match. 0 = off.
    # Paraphrases on the test corpus, hybrid hit@1: 25/28 (off) -> 26/28, as the vector leg alone;
    # LoCoMo R@5 / R@10 64.2 / 76.2 -> 65.7 / 76.9 (0.6 buried LoCoMo answers: R@10 75.6).
    keyword_coverage: float = 0.4
    # Each message gains this share of the fused score of the best exchange window holding it
    # (`storage.units.windows`); 0 = windows are not searched. LoCoMo R@5 65.6 -> 69.0, R@10 77.0 -> 79.2,
    # session R@5 87.3 -> 88.1 (1.0: 68.0 / 78.5).
    window_weight: float = 0.7


SHIPPED = Fusion()
PLAIN_RRF = Fusion(k=60, identifier_keyword_weight=1.0, chat_boost=0.0, keyword_coverage=0.0, window_weight=0.0)

# Windows' vectors are derived from their messages' (`ChunkOptions.window_vectors`); at the vector leg's
# full weight they cost LoCoMo R@10 1.1 against model windows, at 0.75 0.5, the corpus and LongMemEval alike.
WINDOW_VECTOR_WEIGHT = 0.75
# A vector-leg window pulls in proportion to (its similarity / the best window's) ** 2, not by rank
# alone: a Spanish-course window (0.30) no longer lifts its chat above the Lisbon chat (0.52) for "what to
# see in Portugal's capital" (corpus paraphrase hit@1 25 -> 27), LoCoMo R@5 / R@10 +0.1 / +0.2.
WINDOW_SIMILARITY_POWER = 2.0
# The messages whose tool calls read a file the query names, or ran its command, count this share of a
# keyword list; those that edited or created it, all of it: the chat that changed a file comes first.
READ_WEIGHT = 0.5


class Leg(NamedTuple):
    """One ranked list to fuse: its hits best first, its weight, and per-unit factors (None: all 1)."""

    hits: list[UnitHit]
    weight: float
    factors: dict[str, float] | None = None


def rrf(legs: Sequence[Leg], k: int) -> Fused:
    """Weighted RRF, where a leg may scale its units one by one (the keyword leg, by the words each holds).
    Ties keep the order of first appearance (dicts keep insertion order; sorted is stable)."""
    scores: dict[str, float] = {}
    for hits, weight, factors in legs:
        for rank, hit in enumerate(hits, start=1):
            factor = 1.0 if factors is None else factors.get(hit.chunk_id, 1.0)
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight * factor / (k + rank)
    return sorted(scores.items(), key=SCORE, reverse=True)


def relative_similarity(hits: Sequence[UnitHit], power: float) -> dict[str, float] | None:
    """Each hit's similarity over the best one's, to the given power (None when off or not comparable)."""
    top = max((hit.similarity or 0.0 for hit in hits), default=0.0)
    if power <= 0 or top <= 0:
        return None
    return {hit.chunk_id: (max(hit.similarity or 0.0, 0.0) / top) ** power for hit in hits}


def window_boost(fused: Fused, units: dict[str, UnitHit], legs: Sequence[Leg], share: float, k: int) -> Fused:
    """Each message gains `share` of its best window's fused score. A message no leg found on its own
    joins the candidates through its window (into `units`): messages that answer together rank together."""
    windows = {hit.chunk_id: hit for leg in legs for hit in leg.hits}
    best: dict[str, float] = {}
    for window_id, score in rrf(legs, k):
        window = windows[window_id]
        for offset, message_id in enumerate(window.message_ids):
            index = window.first_index + offset
            member = message_chunk_id(window.conversation_id, index)
            if member not in units:
                held = (message_id,) if message_id else ()
                units[member] = UnitHit(member, window.conversation_id, index, index, held)
            best[member] = max(best.get(member, 0.0), score)
    boosted = dict(fused)
    for member, score in best.items():
        boosted[member] = boosted.get(member, 0.0) + share * score
    return sorted(boosted.items(), key=SCORE, reverse=True)


def chat_boost(fused: Fused, units: dict[str, UnitHit], share: float) -> Fused:
    """Each unit gains `share` of its chat's best fused score: with one unit, the chats' own best matches
    keep their order, and many weak matches in one chat count for nothing."""
    best: dict[str, float] = {}
    for chunk_id, score in fused:
        best.setdefault(units[chunk_id].conversation_id, score)
    boosted = [(chunk_id, score + share * best[units[chunk_id].conversation_id]) for chunk_id, score in fused]
    return sorted(boosted, key=SCORE, reverse=True)
