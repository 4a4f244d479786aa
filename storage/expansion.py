"""Query-time signals measured for retrieval round two (issue 13), each off unless it gains without a loss.

- pseudo-relevance feedback: the words the first pass's best units share, that the query does not
  say, join the keyword leg at a mild weight in a second keyword pass (the vector leg is reused);
- common terms: a query word found in a large share of the store's units (a speaker's name that
  begins half of LoCoMo's turns) counts less in the keyword leg, when the query has rarer words;
- chat diversity: a chat's second, third... units in the fused order lose a share each, so the top of
  the list holds evidence from several chats (multi-hop questions' evidence sits in several sessions);
- query splitting (fifth session): a question that joins two things ("Caroline and Melanie", "cook or
  tried out", "... and how did she feel") is searched as itself and as one query per thing, and the
  rankings are merged, so each thing's evidence gets places of its own.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar

from storage.evidence import ChatEvidence, TermWeights
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


_CONJUNCTIONS = frozenset({"and", "or", "&"})
# A conjunction followed by one of these joins two clauses ("... and how did she feel"), not two things.
_CLAUSE_STARTS = frozenset(
    "how what when where why who whom which whose did does do is are was were has have had will would can "
    "could should shall may might i we you he she they it".split()
)
_POSSESSIVES = frozenset({"her", "his", "their", "my", "our", "its"})
_WORD = re.compile(r"[^\W_][\w'-]*")


def _bare(token: str) -> str:
    found = _WORD.search(token)
    return found.group(0).lower() if found else ""


def _content(token: str) -> bool:
    word = _bare(token)
    return bool(word) and word not in STOPWORDS and word not in META_WORDS


def sub_queries(query: str) -> list[str]:
    """The two queries a question that joins two things stands for; none when it joins nothing.

    At the first "and"/"or"/"&" with a content word on each side: two clauses ("what did she buy and
    why did she return it") become each clause, the second keeping the first's names (capitalised words
    not at the start) so a "she" still has someone to be; two things ("Caroline and Melanie", "cook or
    tried out") become the question with either thing, the words between them dropped. No parsing, no
    model: one word each side is the thing, which holds for names and most noun pairs.
    """
    tokens = query.split()
    for i, token in enumerate(tokens):
        if _bare(token) not in _CONJUNCTIONS or i == 0 or i == len(tokens) - 1:
            continue
        left = next((j for j in range(i - 1, -1, -1) if _content(tokens[j])), None)
        right = next((j for j in range(i + 1, len(tokens)) if _content(tokens[j])), None)
        if left is None or right is None:
            continue
        if _bare(tokens[i + 1]) in _CLAUSE_STARTS:
            first, second = tokens[:i], tokens[i + 1 :]
            held = {_bare(t) for t in second}
            names = [t for t in first[1:] if t[:1].isupper() and _bare(t) not in held and _bare(t) != "i"]
            return [" ".join(first), " ".join([*second, *names])]
        start = _parallel_start(tokens, i)
        if start is not None:  # "the volleyball league or the charity run": each thing runs to the end
            return [" ".join(tokens[:i]), " ".join(tokens[:start] + tokens[i + 1 :])]
        with_left = tokens[: left + 1] + tokens[right + 1 :]
        # "Melanie and her kids": the second thing is the first's, so its query keeps the first's word
        owned = any(_bare(t) in _POSSESSIVES for t in tokens[i + 1 : right])
        with_right = tokens[: left + 1 if owned else left] + tokens[right:]
        return [" ".join(with_left), " ".join(with_right)]
    return []


def _parallel_start(tokens: Sequence[str], conjunction: int) -> int | None:
    """Where the first thing starts when the second opens like it: the same function word ("the ... or
    the ...") or the same ending ("fixing ... or trimming ..."); None when nothing before matches."""
    opening = tokens[conjunction + 1]
    word = _bare(opening)
    if word in STOPWORDS and word not in _POSSESSIVES:
        same = [j for j in range(conjunction) if tokens[j] == opening]
    elif len(word) > 4 and word.endswith(("ing", "ed")):
        ending = "ing" if word.endswith("ing") else "ed"
        same = [j for j in range(conjunction) if len(_bare(tokens[j])) > 4 and _bare(tokens[j]).endswith(ending)]
    else:
        return None
    return same[-1] if same else None


class Ranked(Protocol):
    """What a merge reads of a ranking (`storage.search.Ranking`, which imports this module): a dataclass,
    so the merge can be a copy of the whole question's with the merged fields."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def fused(self) -> list[tuple[str, float]]: ...
    @property
    def units(self) -> dict[str, UnitHit]: ...
    @property
    def evidence(self) -> dict[str, ChatEvidence]: ...
    @property
    def direct(self) -> frozenset[str]: ...


R = TypeVar("R", bound=Ranked)


def split_ranking(rank: Callable[[str, bool], R], query: str, parts: Sequence[str], merge: str, k: int) -> R:
    """The query's own ranking merged with each part's (`rank` ranks one text, unsplit; True for a part).

    `interleave` takes the rankings' units in turn (the query's first), `max` scores a unit by its best
    share of a ranking's top score, `rrf` by the sum of 1 / (k + its place) in each; a chat's evidence
    is the query's own where it has any (the strength shown is of the question as asked).
    """
    rankings = [rank(query, False), *(rank(text, True) for text in parts)]
    whole = rankings[0]
    units = {cid: unit for r in reversed(rankings) for cid, unit in r.units.items()}
    evidence: dict[str, ChatEvidence] = {}
    for r in reversed(rankings):
        evidence.update(r.evidence)
    if merge == "interleave":
        order: dict[str, None] = {}
        for place in range(max(len(r.fused) for r in rankings)):
            for r in rankings:
                if place < len(r.fused):
                    order.setdefault(r.fused[place][0], None)
        fused = [(cid, 1.0 / (k + place)) for place, cid in enumerate(order, start=1)]
    else:
        scores: dict[str, float] = {}
        for r in rankings:
            top = r.fused[0][1] if r.fused and r.fused[0][1] > 0 else 1.0
            for place, (cid, score) in enumerate(r.fused, start=1):
                value = score / top if merge == "max" else 1.0 / (k + place)
                scores[cid] = max(scores.get(cid, 0.0), value) if merge == "max" else scores.get(cid, 0.0) + value
        fused = sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
    direct = frozenset(cid for r in rankings for cid in r.direct)
    return replace(whole, fused=fused, units=units, evidence=evidence, direct=direct)
