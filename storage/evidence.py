"""How good a match is, from evidence a model can trust: never from fused rank values.

Three kinds of evidence, each measured per retrieval unit and summed up per chat by its best unit:
- coverage: the share of the query's content words a unit holds, each word weighted by how rare it
  is in the store (BM25's idf), so "Lisbon" counts for much more than "long" or "weekend";
- an identifier (`payment-service`, `TypeError`) found word for word;
- the embedding model's cosine similarity between the query and the unit.

The thresholds below were set on the realistic test corpus (known-topic, paraphrased and nonsense
queries) and checked against LoCoMo and LongMemEval (`bench/strength.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from storage.query import AnalysedQuery, stem_set, stem_words

Strength = Literal["strong", "weak"]

# all-MiniLM-L6-v2 cosine. Known-topic queries' answering units sit at 0.45-0.8 on the corpus;
# unrelated or nonsense queries stay below 0.36 against every chat.
STRONG_SIMILARITY = 0.5
# Both legs moderately sure of the same chat is as good as one leg sure.
AGREEING_SIMILARITY = 0.4
AGREEING_COVERAGE = 0.4
# Most of the query's weight found together in one passage.
STRONG_COVERAGE = 0.6
# A one-word query ("nginx") covers itself fully wherever it appears: only identifiers, or a chat the
# model also finds related, make that strong.
SINGLE_TERM_SIMILARITY = 0.3
# Below this a chat is not counted as matching at all (only in "shown N of M matching chats").
MATCH_SIMILARITY = 0.3

# The only letters beyond ASCII that IGNORECASE matches to an ASCII letter or digit where lower() does not
# give that letter (dotted and dotless I, long s, Kelvin sign; İ also lower-cases to two characters).
# A test checks this list against every code point.
_FOLDS_BEYOND_LOWER = re.compile("[\u0130\u0131\u017f\u212a]")


@dataclass(frozen=True)
class TermWeights:
    """idf weight of each content term of a query; empty for a query of only meta words."""

    weights: Mapping[str, float]
    identifier: bool = False
    # Words that may stem to a query term (a stem minus its last letter, as a word's start: "proxi"
    # finds "proxy" and "proxies"). Only these are stemmed, ~40 passages a search.
    candidates: re.Pattern[str] | None = field(default=None, compare=False)
    # The same starts, for lower-cased ASCII text, with the look-behind after each start's first letter
    # instead of before it: the regular expression then skips ahead to a start's first letter instead of
    # testing every position (coverage of 200 hits: ~2x faster than `candidates`), and a match inside a
    # word fails in the expression rather than in a Python loop afterwards (300 hits: ~1.3x faster
    # again). None when a start is not lower-case ASCII.
    ascii_starts: re.Pattern[str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.weights and self.candidates is None:
            starts = sorted({term[: max(2, len(term) - 1)] for term in self.weights}, key=len, reverse=True)
            alternatives = "|".join(map(re.escape, starts))
            pattern = re.compile(r"(?<![^\W_])(?:" + alternatives + r")[^\W_]*", re.IGNORECASE)
            object.__setattr__(self, "candidates", pattern)
            if all(start.isascii() and start == start.lower() for start in starts):
                # `(?<![^\W_].)` after the first letter: the letter before that one is no letter or digit
                at_word_start = "|".join(re.escape(s[0]) + r"(?<![^\W_].)" + re.escape(s[1:]) for s in starts)
                object.__setattr__(self, "ascii_starts", re.compile(r"(?:" + at_word_start + r")[^\W_]*"))

    @classmethod
    def of(cls, query: AnalysedQuery, total_docs: int, doc_freq: Mapping[str, int]) -> TermWeights:
        if query.meta_only or total_docs == 0:
            return cls({}, query.has_identifier)
        weights = {}
        for term in query.terms:
            df = doc_freq.get(term, 0)
            weights[term] = math.log(1 + (total_docs - df + 0.5) / (df + 0.5))
        return cls(weights, query.has_identifier)

    def coverage(self, text: str) -> float:
        """Share of the query's weight that `text` holds (0..1)."""
        return self.share(self.present(text))

    def present(self, text: str) -> set[str]:
        """The stems in `text` that may be query terms (`share` weighs them; the union of several
        texts' sets is what the texts hold together)."""
        if not self.weights or self.candidates is None:
            return set()
        lowered = self._lowered_words(text)
        if lowered is None:
            return stem_set(" ".join(self.candidates.findall(text)))
        return stem_words(lowered)

    def share(self, present: Collection[str]) -> float:
        """Share of the query's weight among these stems (0..1)."""
        total = sum(self.weights.values())
        if not total or self.candidates is None:
            return 0.0
        return sum(w for term, w in self.weights.items() if term in present) / total

    def _lowered_words(self, text: str) -> set[str] | None:
        """The distinct words of `text` that start with one of the starts, lower-cased; None where only the
        general expression can tell (a start that is not lower-case ASCII, or a letter IGNORECASE folds
        to ASCII and `lower()` does not)."""
        if self.ascii_starts is None or (not text.isascii() and _FOLDS_BEYOND_LOWER.search(text)):
            return None
        # Without those letters, lower() is what IGNORECASE matches, it keeps every position, and [^\W_]
        # is isalnum() before and after it.
        return set(self.ascii_starts.findall(text.lower()))


@dataclass
class ChatEvidence:
    """The best evidence any unit of one chat gave."""

    coverage: float = 0.0
    similarity: float | None = None
    exact: bool = False

    def add(self, coverage: float | None = None, similarity: float | None = None, exact: bool = False) -> None:
        if coverage is not None:
            self.coverage = max(self.coverage, coverage)
        if similarity is not None:
            self.similarity = similarity if self.similarity is None else max(self.similarity, similarity)
        self.exact = self.exact or exact

    def strength(self, weights: TermWeights) -> Strength:
        similarity = self.similarity if self.similarity is not None else -1.0
        if self.exact or similarity >= STRONG_SIMILARITY:
            return "strong"
        if self.coverage >= AGREEING_COVERAGE and similarity >= AGREEING_SIMILARITY:
            return "strong"
        if self.coverage >= STRONG_COVERAGE:
            if len(weights.weights) > 1:
                return "strong"
            if weights.identifier or similarity >= SINGLE_TERM_SIMILARITY:
                return "strong"
        return "weak"

    def matches(self) -> bool:
        return self.exact or self.coverage > 0 or (self.similarity is not None and self.similarity >= MATCH_SIMILARITY)


def keyword_factor(coverage: float, full: float) -> float:
    """How much a keyword hit counts in the fusion: fully from `full` coverage up, less below (in
    proportion to `coverage / full`; a squared ramp did worse on LoCoMo at every threshold tried).

    A hit that holds only the query's common words ranks high in BM25 when nothing better exists, and
    would otherwise bury a strong semantic match (issue 10: paraphrased questions).
    """
    if full <= 0:
        return 1.0
    return min(1.0, coverage / full)


def strongest_first(chats: Iterable[tuple[str, Strength]]) -> list[str]:
    """Chat ids with strong ones first, each group in its given (rank) order."""
    ordered = list(chats)
    return [cid for cid, s in ordered if s == "strong"] + [cid for cid, s in ordered if s != "strong"]
