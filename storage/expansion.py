"""Query-time signals measured for retrieval round two (issue 13), each off unless it gains without a loss.

- pseudo-relevance feedback: the words the first pass's best units share, that the query does not
  say, join the keyword leg at a mild weight in a second keyword pass (the vector leg is reused);
- common terms: a query word found in a large share of the store's units (a speaker's name that
  begins half of LoCoMo's turns) counts less in the keyword leg, when the query has rarer words;
- chat diversity: a chat's second, third... units in the fused order lose a share each, so the top of
  the list holds evidence from several chats (multi-hop questions' evidence sits in several sessions).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage.evidence import TermWeights
from storage.keyword_index import KeywordIndex
from storage.lance_store import UnitHit
from storage.query import META_WORDS, STOPWORDS, AnalysedQuery, stem_tokens

# Feedback words must be words: at least three letters, no digits (dates and counts are too specific
# to one unit to describe what the query is about).
_FEEDBACK_WORD = re.compile(r"[^\W\d_]{3,}")


@dataclass(frozen=True)
class Feedback:
    """A second keyword pass: extra terms with their weights, and the vector leg's hits to reuse."""

    boosts: Mapping[str, float]
    weights: ExpandedWeights  # what the second pass's keyword hits count by
    vector_hits: list[UnitHit] | None


@dataclass(frozen=True)
class ExpandedWeights:
    """Coverage for the second pass: the query's words as before, and the feedback words' weight on top
    (as a share of the query's), so a hit never counts less than in the first pass."""

    query: TermWeights
    extra: TermWeights

    def coverage(self, text: str) -> float:
        base = sum(self.query.weights.values())
        if not base:
            return self.query.coverage(text)
        more = self.extra.coverage(text) * sum(self.extra.weights.values()) / base
        return min(1.0, self.query.coverage(text) + more)


def feedback(
    keywords: KeywordIndex,
    query: AnalysedQuery,
    fused: Sequence[tuple[str, float]],
    weights: TermWeights,
    units: int,
    count: int,
    weight: float,
    vector_hits: list[UnitHit] | None,
) -> Feedback:
    """What the second keyword pass adds: the first pass's `units` best units' strongest words."""
    top = list(fused[:units])
    texts = keywords.stored_texts(cid for cid, _ in top)
    stems = [candidate_stems(texts.get(cid, "")) for cid, _ in top]
    total, freqs = keywords.doc_freqs({s for found in stems for s in found})
    terms = feedback_terms(query, stems, [score for _, score in top], total, freqs, count)
    boosts = {term: weight * share for term, share in terms.items()}
    idfs = idf(total, freqs)
    extra = TermWeights({term: boost * idfs.get(term, 0.0) for term, boost in boosts.items()})
    return Feedback(boosts, ExpandedWeights(weights, extra), vector_hits)


def feedback_terms(
    query: AnalysedQuery,
    stems: Sequence[Sequence[str]],
    scores: Sequence[float],
    total_docs: int,
    doc_freq: Mapping[str, int],
    count: int,
) -> dict[str, float]:
    """The `count` strongest words of the feedback texts (as stems) that the query lacks, each 0..1.

    A word scores by how much of each text it is (its share of the text's words), weighted by the text's
    fused score over the best one's, summed over the texts, times its idf: words several good units
    share and the store seldom holds (RM3's relevance model, without its query mixture).
    """
    top = max(scores, default=0.0)
    if count <= 0 or top <= 0:
        return {}
    query_terms = set(query.terms)
    weight: dict[str, float] = {}
    for found, score in zip(stems, scores, strict=True):
        if not found:
            continue
        share = score / top / len(found)
        for stem, tf in Counter(found).items():
            if stem not in query_terms:
                weight[stem] = weight.get(stem, 0.0) + tf * share
    idfs = idf(total_docs, doc_freq)
    scored = {
        stem: w * idfs.get(stem, 0.0)
        for stem, w in weight.items()
        if doc_freq.get(stem, 0) > 1  # a word in one unit only is that unit's, not the topic's
    }
    best = sorted(scored.items(), key=lambda pair: pair[1], reverse=True)[:count]
    if not best or best[0][1] <= 0:
        return {}
    strongest = best[0][1]
    return {stem: w / strongest for stem, w in best}


def candidate_stems(text: str) -> list[str]:
    """The stems of a text's content words (stop, meta and short words and numbers left out)."""
    words = _FEEDBACK_WORD.findall(text.lower())
    content = [w for w in words if w not in STOPWORDS and w not in META_WORDS]
    return stem_tokens(" ".join(content)) if content else []


def idf(total_docs: int, doc_freq: Mapping[str, int]) -> dict[str, float]:
    return {t: math.log(1 + (total_docs - df + 0.5) / (df + 0.5)) for t, df in doc_freq.items()}


def common_term_boosts(weights: TermWeights, share: float, weight: float) -> dict[str, float]:
    """The query's terms found in more than `share` of the units (by their idf), at `weight`; none when
    every term is that common (then they are all the query has)."""
    if share <= 0 or not weights.weights:
        return {}
    ceiling = math.log(1 + (1 - share) / share)  # the idf of a term in `share` of a large store
    common = {t: weight for t, w in weights.weights.items() if w < ceiling}
    return common if len(common) < len(weights.weights) else {}


def diversified(
    fused: list[tuple[str, float]], chat_of: Mapping[str, str], share: float, free: int = 1
) -> list[tuple[str, float]]:
    """Each chat's n-th unit keeps (1 - share) ** (n - free) of its score (its first `free` units all).

    Within a chat the order stays, and so does the order of the chats' best units (their first
    appearance, which is what the chat order is); only later units of one chat fall behind other chats'.
    """
    if share <= 0:
        return fused
    seen: Counter[str] = Counter()
    out = []
    keep = 1.0 - share
    for cid, score in fused:
        chat = chat_of[cid]
        out.append((cid, score * keep ** max(0, seen[chat] + 1 - free)))
        seen[chat] += 1
    return sorted(out, key=lambda pair: pair[1], reverse=True)


def agreement_boost(
    fused: list[tuple[str, float]], chat_of: Mapping[str, str], tops: Sequence[set[str]], share: float
) -> list[tuple[str, float]]:
    """Each unit gains `share` × the share of the legs whose first units hold its chat (`tops`: one set
    of chats per leg): a chat several legs find near their top, each through its own units, is more
    likely the one meant than one a single leg ranks first. Within a chat the order stays."""
    if share <= 0 or not tops:
        return fused
    counts: Counter[str] = Counter(chat for top in tops for chat in top)
    out = [(cid, score * (1 + share * counts[chat_of[cid]] / len(tops))) for cid, score in fused]
    return sorted(out, key=lambda pair: pair[1], reverse=True)
