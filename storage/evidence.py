"""How good a match is, from evidence a model can check: never from fused rank values.

Per chat, from its units (a message's passages, and up to three consecutive messages together):
- which of the query's content words it holds and which it lacks, each word weighted by how rare it
  is in the store (BM25's idf), so "Lisbon" counts for much more than "long" or "weekend"; and the
  share of that weight one unit holds together (coverage);
- consecutive query words found together ("signing bonus"), and an identifier (`payment-service`,
  `TypeError`) found word for word;
- the embedding model's cosine similarity between the query and its best message, read as a meaning
  that is close, related or loose.
Tool output (command results, "Todos have been modified successfully") is searched, but it is no
evidence of what a chat is about: it never makes a chat strong.

A chat's title names what all of it is about: its words count as held by every unit of the chat.

A chat is strong when it holds an identifier word for word, its title holds the query, most of the
query's weight is together in one unit, or its meaning matches; a chat holding none of the query's
words only when its meaning is close, and when a short query (a few chosen words) names something rare
the chat lacks while it holds the rest ("Redis cluster failover" against a chat on Redis clusters),
likewise. `RULES` is the whole decision, one row a case. Chats on the same question (`same_question`)
are shown newest first (`newest_first`): a decision reversed later is read in its latest word.
Thresholds were set on a labelled set of answerable, paraphrased and unanswerable questions over the
realistic test corpus (`tests/fixtures/corpus/strength.json`) and checked on LongMemEval
(`bench/quality/strength.py`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from storage.query.analysis import AnalysedQuery, stem_set, stem_words

Strength = Literal["strong", "weak"]
Meaning = Literal["close", "related", "loose"]

# all-MiniLM-L6-v2 cosine of the query and a chat's best message. Answering messages of keyword
# questions sit at 0.4-0.8 on the corpus, of paraphrased ones at 0.3-0.65; near misses (a chat on the
# same topic, not the thing asked) reach 0.6; unrelated chats and nonsense stay below 0.36.
CLOSE_MEANING = 0.6
RELATED_MEANING = 0.42
# Both legs moderately sure of the same chat (much of the query in one place, a related meaning) is as
# good as one leg sure.
AGREEING_SIMILARITY = 0.38
AGREEING_COVERAGE = 0.4
# Most of the query's weight found together in one passage or one question and its answer.
STRONG_COVERAGE = 0.6
# Words of the query found together in a chat the model finds this far in meaning stand together by
# chance: "self-hosted" in a chat on a database upgrade for "reach my self-hosted apps while
# travelling", "per hour" in a running plan for "per-hour statistics". Not for code
# identifiers (E0106, use_x_forwarded_for), whose meaning the model cannot tell: their answering chats
# sit at 0.17-0.19 on the corpus.
UNRELATED_MEANING = 0.2
# A one-word query ("nginx") covers itself fully wherever it appears: only identifiers, or a chat the
# model also finds related, make that strong.
SINGLE_TERM_SIMILARITY = 0.3
# A query of at most this many content words is a list of chosen words: each one counts.
SHORT_QUERY = 4
# The query's distinguishing words: its rarest, within this share of the rarest one's weight. A chat
# lacking distinguishing words worth this share of the query's weight is lacking what was asked.
DISTINGUISHING = 0.8
LACKING_SHARE = 0.3
# Two chats answer the same question when both hold this share of the query's weight that either holds.
SAME_QUESTION = 0.6
# ... and a weak chat joins a strong one on the same question only sharing this share of the query's weight.
WEAK_SHARED = 0.5
MAX_PASSAGES = 4  # a chat's passages kept to find the query's words together in

# The only letters beyond ASCII that IGNORECASE matches to an ASCII letter or digit where lower() does not
# give that letter (dotted and dotless I, long s, Kelvin sign; İ also lower-cases to two characters).
# A test checks this list against every code point.
# A function or variable name in lower camel case: setInterval, useEffect, getUserById.
_CODE_NAME = re.compile(r"[a-z]{2,}[A-Z][A-Za-z0-9]*")
_FOLDS_BEYOND_LOWER = re.compile("[\u0130\u0131\u017f\u212a]")


@dataclass(frozen=True)
class TermWeights:
    """idf weight of each content term of a query; empty for a query of only meta words."""

    weights: Mapping[str, float]
    identifier: bool = False
    code: bool = False  # an identifier the embedding model cannot read (`AnalysedQuery.code`)
    # Each term as the query spelled it; the terms no document holds; consecutive terms (phrases).
    words: Mapping[str, str] = field(default_factory=dict, compare=False)
    absent: frozenset[str] = frozenset()
    pairs: tuple[tuple[str, str], ...] = ()
    # Words that may stem to a query term (a stem minus its last letter, as a word's start: "proxi"
    # finds "proxy" and "proxies"). Only these are stemmed, ~40 passages a search.
    candidates: re.Pattern[str] | None = field(default=None, compare=False)
    # The same starts, for lower-cased ASCII text, with the look-behind after each start's first letter
    # instead of before it: the regular expression then skips ahead to a start's first letter instead of
    # testing every position (coverage of 200 hits: ~2x faster than `candidates`), and a match inside a
    # word fails in the expression rather than in a Python loop afterwards (300 hits: ~1.3x faster
    # again). None when a start is not lower-case ASCII.
    ascii_starts: re.Pattern[str] | None = field(default=None, compare=False)
    # The query's quoted phrases as typed, and as plain words (`storage.query.grammar`): every chat a
    # search finds holds them. Their words (`phrase_terms`, those no other query word stems to) count as
    # matched only as the phrase.
    quoted: tuple[str, ...] = ()
    quoted_words: tuple[tuple[str, ...], ...] = ()
    phrase_terms: frozenset[str] = frozenset()

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
            return cls(
                {},
                query.has_identifier,
                query.code,
                quoted=query.quoted,
                quoted_words=query.required_words,
                phrase_terms=query.phrase_terms,
            )
        weights = {}
        for term in query.terms:
            df = doc_freq.get(term, 0)
            weights[term] = math.log(1 + (total_docs - df + 0.5) / (df + 0.5))
        return cls(
            weights,
            query.has_identifier,
            query.code,
            words=dict(zip(query.terms, query.words, strict=False)),
            absent=frozenset(term for term in query.terms if not doc_freq.get(term, 0)),
            pairs=tuple(zip(query.terms, query.terms[1:], strict=False)),
            quoted=query.quoted,
            quoted_words=query.required_words,
            phrase_terms=query.phrase_terms,
        )

    @functools.cached_property
    def ranked(self) -> tuple[str, ...]:
        """The terms, rarest first."""
        return tuple(sorted(self.weights, key=lambda term: -self.weights[term]))

    @functools.cached_property
    def _distinguishing(self) -> tuple[frozenset[str], float]:
        """The rarest terms (`DISTINGUISHING`), and the query's whole weight."""
        top = max(self.weights.values(), default=0.0)
        rare = frozenset(t for t, w in self.weights.items() if w >= DISTINGUISHING * top)
        return rare, sum(self.weights.values()) or 1.0

    def lacking_share(self, present: Collection[str]) -> float:
        """The share of the query's weight in distinguishing terms not among `present`. A word no chat
        holds is not lacked by a chat holding a distinguishing word that chats do hold; otherwise it is the
        very thing asked for ("Tokyo flight prices", where nobody wrote "Tokyo")."""
        rare, total = self._distinguishing
        if any(t in present for t in rare if t not in self.absent):
            rare = frozenset(t for t in rare if t not in self.absent)
        return sum(self.weights[t] for t in rare if t not in present) / total

    @functools.cached_property
    def code_terms(self) -> frozenset[str]:
        """The terms the query spelled as a code name (`setInterval`, `useEffect`): a chat holding one
        holds it word for word, as it would `payment-service`. Not names like iPhone or S3."""
        return frozenset(term for term, word in self.words.items() if _CODE_NAME.fullmatch(word))

    def phrases_in(self, text: str, present: Collection[str]) -> list[tuple[str, str]]:
        """The query's consecutive words that `text` holds together (at most two words apart: "Klara
        and the Sun"), among the pairs whose both words it holds."""
        found = []
        for pair in self.pairs:
            if pair[0] in present and pair[1] in present and _pair_pattern(pair).search(text):
                found.append(pair)
        return found

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


def spellings(weights: TermWeights, texts: Iterable[str]) -> dict[str, str]:
    """For each query term `texts` hold only in a form other than the query's word (stemmed alike:
    "liveness" for "living"), the first such form: a match the model can find in the text."""
    if weights.candidates is None:
        return {}
    typed = {term: word.casefold() for term, word in weights.words.items()}
    forms: dict[str, str] = {}
    found: set[str] = set()
    for text in texts:
        for word in weights.candidates.findall(text):
            stems = stem_words({word.lower()})
            term = next(iter(stems), "") if len(stems) == 1 else ""
            if term not in weights.weights:
                continue
            if word.casefold() == typed.get(term, term):
                found.add(term)
            else:
                forms.setdefault(term, word)
    return {term: form for term, form in forms.items() if term not in found}


@functools.lru_cache(maxsize=256)
def _pair_pattern(pair: tuple[str, str]) -> re.Pattern[str]:
    first, second = (re.escape(term[: max(2, len(term) - 1)]) for term in pair)
    return re.compile(rf"(?<![^\W_]){first}[^\W_]*(?:\W+[^\W_]+){{0,2}}?\W+{second}", re.IGNORECASE)


@dataclass
class ChatEvidence:
    """What one chat's units gave: the best of each kind of evidence, and which query words it holds."""

    coverage: float = 0.0  # the best unit's share of the query's weight (a passage, or a few messages together)
    similarity: float | None = None  # the best cosine of a message to the query
    exact: bool = False  # an identifier word for word, in what the user or the assistant wrote
    present: set[str] = field(default_factory=set)  # query stems the user's and assistant's messages hold
    tool_present: set[str] = field(default_factory=set)  # ... that tool output holds
    # Passages holding several query words: where consecutive ones may stand together (read only for the
    # chats a result shows).
    passages: list[str] = field(default_factory=list)
    # The query stems each unit holds (a passage, or a question and its answer), distinct sets only: with
    # the title's, what the unit and the title hold together.
    units: set[frozenset[str]] = field(default_factory=set)
    title: frozenset[str] = frozenset()  # query stems the chat's title holds
    written: set[str] = field(default_factory=set)  # query stems the user's and assistant's messages hold
    covering: int | None = None  # the first message of the unit holding most of the query's weight
    edited: bool = False  # its agent edited or created a file the query names

    def add(self, coverage: float | None = None, similarity: float | None = None, exact: bool = False) -> None:
        if coverage is not None:
            self.coverage = max(self.coverage, coverage)
        if similarity is not None:
            self.similarity = similarity if self.similarity is None else max(self.similarity, similarity)
        self.exact = self.exact or exact

    def add_unit(self, present: set[str], weights: TermWeights, index: int | None = None) -> None:
        """A unit of what the user or the assistant wrote (its first message at `index`), holding these
        query stems: its share of the query's weight counts with the title's words."""
        held = frozenset(present)
        self.units.add(held)
        coverage = weights.share(held | self.title)
        if index is not None and (coverage > self.coverage or self.covering is None):
            self.covering = index
        self.add(coverage=coverage)

    def add_title(self, present: set[str], weights: TermWeights) -> None:
        """The query stems the chat's title holds: a title names what the chat is about, so its words count
        as held by every unit (and alone, as one unit)."""
        self.title = frozenset(present)
        if not self.title:
            return
        self.present |= self.title
        self.add(coverage=max((weights.share(unit | self.title) for unit in self.units), default=0.0))
        self.add(coverage=weights.share(self.title))

    def add_words(self, present: set[str], text: str, tool: bool = False) -> None:
        if tool:
            self.tool_present |= present
            return
        self.present |= present
        self.written |= present
        if len(present) > 1 and len(self.passages) < MAX_PASSAGES:
            self.passages.append(text)

    def strength(self, weights: TermWeights) -> tuple[Strength, str]:
        """Strong or weak, and why in one line."""
        strong, why = self._decide(weights)
        if not strong and (tool_only := [t for t in weights.ranked if t in self.tool_present - self.present]):
            found = ", ".join(weights.words.get(t, t) for t in tool_only)
            why = f"{why}; {found} only in tool output" if self.present else f"found only in tool output ({found})"
        return ("strong" if strong else "weak"), why

    def verdict(self, weights: TermWeights, spelled: Mapping[str, str] | None = None) -> Verdict:
        """The strength with the evidence the model is shown, in the query's own words (rarest first).
        `spelled`: a word the chat holds for a query word it holds only in another form (`spellings`),
        shown beside it ("living (as liveness)"); a word only its title holds says so."""
        strength, why = self.strength(weights)
        named = weights.words.get
        spelled = spelled or {}

        def held(term: str) -> str:
            word = named(term, term)
            if term not in self.written:
                return f"{word} (in the title)"
            return f"{word} (as {spelled[term]})" if term in spelled else word

        phrases = {pair for text in self.passages for pair in weights.phrases_in(text, self.present)}
        meaning: Meaning | None = None
        if self.similarity is not None:
            s = self.similarity
            meaning = "loose" if s < RELATED_MEANING else "related" if s < CLOSE_MEANING else "close"
        loose = [t for t in weights.ranked if t not in weights.phrase_terms]  # a quoted word counts in its phrase
        quoted = tuple(f'"{phrase}"' for phrase in weights.quoted)
        return Verdict(
            strength=strength,
            matched=quoted + tuple(held(t) for t in loose if t in self.present),
            missing=tuple(named(t, t) for t in loose if t not in self.present),
            phrases=tuple(
                f"{named(a, a)} {named(b, b)}"
                for a, b in weights.pairs
                if (a, b) in phrases and not {a, b} <= weights.phrase_terms
            ),
            meaning=meaning,
            why=why,
        )

    def _decide(self, weights: TermWeights) -> tuple[bool, str]:
        facts = Facts(
            similarity=-1.0 if self.similarity is None else self.similarity,
            coverage=self.coverage,
            exact=self.exact or not weights.code_terms.isdisjoint(self.written),
            # A chat the vector leg did not reach is unknown in meaning, not far (a large store's top passages).
            by_chance=self.similarity is not None and not weights.code and self.similarity < UNRELATED_MEANING,
            terms=len(weights.weights),
            holds_words=bool(self.present),
            lacking=weights.lacking_share(self.present),
            identifier=weights.identifier,
            titled=weights.share(self.title),
        )
        return next((strong, why) for rule, strong, why in RULES if rule(facts))


@dataclass(frozen=True)
class Facts:
    """What a chat's strength is decided on (`RULES`)."""

    similarity: float  # the best cosine of a message to the query; -1 when the vector leg did not reach it
    coverage: float  # the best unit's share of the query's weight, the title's words counted in
    exact: bool  # an identifier word for word
    by_chance: bool  # the meaning is unrelated (below UNRELATED_MEANING), and the query is not code
    terms: int  # the query's content words
    holds_words: bool  # any of them, in what the user or the assistant wrote or in the title
    lacking: float  # the share of the query's weight in its rarest words that the chat lacks
    identifier: bool  # the query holds an identifier
    titled: float  # the share of the query's weight the chat's title holds


# The strength rules, first match wins: (when, strong, why in one line). Each row is a case of
# tests/storage/test_evidence.py.
RULES: tuple[tuple[Callable[[Facts], bool], bool, str], ...] = (
    (lambda f: f.exact and not f.by_chance, True, "holds the query's identifier word for word"),
    # A title names what the whole chat is about: its words are no chance meeting, whatever the meaning
    # of the messages (the model never reads the title).
    (
        lambda f: (
            f.titled >= STRONG_COVERAGE and (f.terms > 1 or f.identifier or f.similarity >= SINGLE_TERM_SIMILARITY)
        ),
        True,
        "its title holds the query's words",
    ),
    (
        lambda f: f.by_chance and (f.exact or f.coverage >= STRONG_COVERAGE),
        False,
        "holds the query's words, but is unrelated in meaning",
    ),
    (lambda f: not f.terms, False, "the query has no words to look for"),
    # None of the query's words: only a close meaning is evidence (a related one is the topic, not the answer).
    (
        lambda f: not f.holds_words and f.similarity >= CLOSE_MEANING,
        True,
        "holds none of the query's words, but is close in meaning",
    ),
    (lambda f: not f.holds_words, False, "holds none of the query's words and is not close in meaning"),
    # A short query names what it wants: lacking its rarest words, the chat is about something else.
    (
        lambda f: f.terms <= SHORT_QUERY and f.lacking >= LACKING_SHARE and f.similarity >= CLOSE_MEANING,
        True,
        "lacks the query's rarest words, but is close in meaning",
    ),
    (lambda f: f.terms <= SHORT_QUERY and f.lacking >= LACKING_SHARE, False, "lacks the query's rarest words"),
    (
        lambda f: (
            f.coverage >= STRONG_COVERAGE and (f.terms > 1 or f.identifier or f.similarity >= SINGLE_TERM_SIMILARITY)
        ),
        True,
        "holds the query's words together",
    ),
    (lambda f: f.similarity >= CLOSE_MEANING, True, "close in meaning"),
    (lambda f: f.similarity >= RELATED_MEANING, True, "related in meaning"),
    (
        lambda f: f.coverage >= AGREEING_COVERAGE and f.similarity >= AGREEING_SIMILARITY,
        True,
        "holds part of the query's words and is related in meaning",
    ),
    (lambda f: True, False, "holds only part of the query's words"),
)


@dataclass(frozen=True)
class Verdict:
    """A chat's strength and the evidence behind it, in the query's own words (rarest first)."""

    strength: Strength
    matched: tuple[str, ...]  # query words what the user or the assistant wrote holds
    missing: tuple[str, ...]  # query words it lacks
    phrases: tuple[str, ...]  # consecutive query words found together
    meaning: Meaning | None  # None: no embedding model answered
    why: str  # one line: why it is strong or weak


def keyword_factor(coverage: float, full: float) -> float:
    """How much a keyword hit counts in the fusion: fully from `full` coverage up, less below (in
    proportion to `coverage / full`; a squared ramp did worse on LoCoMo at every threshold tried).

    A hit that holds only the query's common words ranks high in BM25 when nothing better exists, and
    would otherwise bury a strong semantic match (a paraphrased question shares few of its words).
    """
    if full <= 0:
        return 1.0
    return min(1.0, coverage / full)


def same_question(head: ChatEvidence, other: ChatEvidence, weights: TermWeights, *, strong: bool) -> bool:
    """Whether `other` answers the question a strong chat (`head`) answers: both hold most of the query's
    weight that either holds ("Northwind offer: decline" and "Northwind reversed: accepting" for "job
    offer accept decline"; an update mentioned in passing is loose in meaning, and still the latest word).
    A strong `other` close in meaning needs only a word in common (a taper chat for "marathon target
    finish time" speaks of a goal); a weak one must hold every query word the head holds, or most of
    them and be related in meaning, sharing at least `WEAK_SHARED` of the query's weight with the head.
    A chat whose agent changed a file the query names and one that did not answer different questions:
    the one that only read it is no later word on the change."""
    if head.edited != other.edited:
        return False
    shared = head.present & other.present
    if not shared:
        return False
    similarity = other.similarity or 0.0
    by_words = weights.share(shared) >= SAME_QUESTION * weights.share(head.present | other.present)
    if strong:
        # sharing the rarest word the head holds: what distinguishes its answer, not only common words
        rarest = next(term for term in weights.ranked if term in head.present)
        return (by_words and rarest in shared) or similarity >= CLOSE_MEANING
    if weights.share(shared) < WEAK_SHARED:
        return False  # a weak chat sharing a word or two with a chat strong by meaning is elsewhere
    return other.present >= head.present or (by_words and similarity >= RELATED_MEANING)


def newest_first(
    order: Sequence[str],
    strong: Collection[str],
    weak: Collection[str],
    same: Callable[[str, str], bool],
    when: Mapping[str, datetime],
) -> tuple[list[str], dict[str, str], set[str]]:
    """`order` with the chats on the same question as a better-ranked strong chat moved to its place,
    newest first: a decision reversed later is read in its latest word first. Of the `weak` chats (related
    in meaning), only those newer than that strong chat join it: they hold its latest word.

    Returns the order; for each chat a newer one on the same question went before, that newer chat; and
    the weak chats that joined (strong from now on)."""
    ranked = [cid for cid in order if cid in strong or cid in weak]
    placed: set[str] = set()
    result: list[str] = []
    newer: dict[str, str] = {}
    joined: set[str] = set()
    for cid in order:
        if cid in placed:
            continue
        group = [cid]
        if cid in strong:
            group += [
                other
                for other in ranked
                if other not in placed
                and other != cid
                and (other in strong or when[other] > when[cid])
                and same(cid, other)
            ]
            group.sort(key=lambda c: when[c], reverse=True)  # stable: chats of the same time keep their rank
            newer |= {older: group[0] for older in group[1:] if when[older] < when[group[0]]}
            joined |= {other for other in group if other not in strong}
        result += group
        placed.update(group)
    return result, newer, joined


def strongest_first(chats: Iterable[tuple[str, Strength]]) -> list[str]:
    """Chat ids with strong ones first, each group in its given (rank) order."""
    ordered = list(chats)
    return [cid for cid, s in ordered if s == "strong"] + [cid for cid, s in ordered if s != "strong"]
