"""Hybrid search: both legs under the same filters, fused with RRF, grouped by chat, expanded to context."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, get_args

import numpy as np

from storage.chunking import ChunkOptions
from storage.embedder import Embedder, Vectors
from storage.evidence import ChatEvidence, Strength, TermWeights, keyword_factor, strongest_first
from storage.expansion import (
    ExpandedWeights,
    Feedback,
    agreement_boost,
    common_term_boosts,
    diversified,
    feedback,
    split_ranking,
    sub_queries,
)
from storage.filters import Filters
from storage.fusion import rrf
from storage.hits import ConversationMeta, chat_hit, shown
from storage.keyword_index import KeywordIndex
from storage.lance_store import LanceStore, UnitHit
from storage.models import Message
from storage.priors import asks_for_latest, content_text, importance_prior, recency_prior
from storage.query import AnalysedQuery, analyse
from storage.results import Match, SearchMode, SearchResult
from storage.units import CHAT, MESSAGE, WINDOW, kind_of, message_chunk_id
from storage.vector_matrix import SCAN_THREADS

log = logging.getLogger(__name__)

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)  # the modes a search accepts
SCORE = itemgetter(1)  # of a (chunk id, score) pair: the sort key of every fused list (a lambda's calls cost more)

# Query embedding and the vector leg, beside the keyword leg (`SearchEngine.rank`).
_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pastchats-vector-leg")

LEG_DEPTH = 100  # candidates each leg contributes to the fusion
# How deep `SearchEngine.search` reads each leg: the depth at which the quality tables were measured
# (bench/quality ranks `search_units(limit=100)`: every leg 100 deep). Until the seventh session the
# tool read 200 deep, a leftover of asking for 200 fused units: twice the keyword documents and coverage
# checks, twice the vector leg's hits, for chats ranked below anything shown (docs/BENCHMARKS.md, round seven).
SEARCH_DEPTH = LEG_DEPTH
# The vector leg ranks every kind of unit at once; when the fusion uses windows or chat documents it
# reads this many times deeper, so that each kind still gets about LEG_DEPTH candidates.
VECTOR_OVERFETCH = 3
# The scan's threads beside the keyword leg. One thread (leaving the keyword leg a core) won before the
# float16 rows were read by `pread`, and lost after it at load 3.7-8 (`bench/search_phases.py --only
# threads`; docs/BENCHMARKS.md, round five): both threads, until a quiet machine says otherwise.
HYBRID_SCAN_THREADS = SCAN_THREADS


@dataclass(frozen=True)
class Fusion:
    """How the legs' rankings become one. The defaults are what ships, each measured on LoCoMo and
    LongMemEval (docs/BENCHMARKS.md); `PLAIN_RRF` is the textbook baseline they are measured against."""

    # Cormack et al. chose k = 60 for fusing many TREC runs 1,000 deep. Fusing two legs 100 deep, one a
    # small embedding model, 60 lets a chunk both legs rank middling (15th and 15th) beat one a leg ranks
    # first; 10 keeps first places first. LoCoMo R@5 53.7 -> 60.8, R@10 61.9 -> 72.8.
    k: int = 10
    keyword_weight: float = 1.0
    vector_weight: float = 1.0
    # With identifiers (TypeError, payment-service) exact words beat meaning: the keyword leg counts more.
    identifier_keyword_weight: float = 2.0
    # A unit in a chat that matches strongly elsewhere is more likely the one meant: each unit gains this
    # share of its chat's evidence (the fused scores of the chat's best `chat_units` units). With one unit
    # the chats' own best matches keep their order, and many weak matches in one chat count for nothing.
    # LoCoMo R@5 60.8 -> 64.2, R@10 72.8 -> 76.2.
    chat_boost: float = 0.6
    chat_units: int = 1
    # Each unit gains this share of its neighbouring messages' scores (tried; it hurt, so it is off).
    neighbour_share: float = 0.0
    # A keyword hit counts fully once it holds this share of the query's (idf-weighted) words, less in
    # proportion below: hits on common words alone no longer bury a strong semantic match. 0 = off.
    # Paraphrases on the test corpus, hybrid hit@1: 25/28 (off) -> 26/28, as the vector leg alone;
    # LoCoMo R@5 / R@10 64.2 / 76.2 -> 65.7 / 76.9. 0.6 buried LoCoMo answers (R@10 75.6); a squared
    # ramp (power 2) did worse on LoCoMo at every threshold tried (docs/BENCHMARKS.md).
    keyword_coverage: float = 0.4
    keyword_coverage_power: float = 1.0
    # Coarse units (`storage.units`): each message gains this share of the fused score of the best
    # exchange window holding it, and of its chat's document. 0 = that leg is not searched. Windows at
    # 0.7 (with the similarity scaling below): LoCoMo R@5 65.6 -> 69.0, R@10 77.0 -> 79.2, session R@5
    # 87.3 -> 88.1 (1.0: 68.0 / 78.5); chat documents: +0.5 at 0.3, -5 at 1.0, so they stay off
    # (`ChunkOptions` does not build them).
    window_weight: float = 0.7
    chat_doc_weight: float = 0.0
    # The keyword coverage rule applies to windows' keyword hits too, with its own power.
    coarse_coverage: bool = True
    coarse_coverage_power: float = 1.0
    # Rank alone says nothing of how far apart two windows are: the vector leg's window at 0.52 cosine
    # and the next at 0.30 pull alike. With a power p > 0 each vector-leg window pulls in proportion to
    # (its similarity / the best window's) ** p. 0 = by rank alone. By rank alone a Spanish-course
    # window (0.30) lifted its chat above the Lisbon chat (0.52) for "what to see in Portugal's capital"
    # (corpus paraphrase hit@1 26 -> 25 with windows); p = 2: 27, and LoCoMo R@5 / R@10 68.9 / 79.0 ->
    # 69.0 / 79.2 (open-domain R@10 50.8 -> 49.2); p = 1 and 0.5 fix the corpus too, with less on LoCoMo.
    window_similarity_power: float = 2.0
    # Where windows' keyword scores come from. "members": from the message leg's hits, with no search or
    # reading of their own: a window scores the sum of its messages' best BM25 scores and holds the query
    # words its messages hold together. "search": a BM25 search over window texts (a second Tantivy
    # search, 100 documents read and their coverage checked: ~4.6 of the keyword side's ~10 ms of CPU
    # at 100k). Same stores, search -> members: LoCoMo R@5 / R@10 / session R@5 69.0 / 79.1 / 88.1 ->
    # 69.0 / 79.3 / 87.9, LongMemEval user turns recall_all@5 / ndcg_any@10 97.9 / 96.3 -> 97.9 / 96.5,
    # the corpus identical; a window scored by its best message instead of the sum: R@10 78.5.
    window_keywords: str = "members"
    # The vector leg's windows count this share of the vector leg's weight. Windows' vectors derived from
    # their messages' (`ChunkOptions.window_vectors`) at 1.0: LoCoMo R@10 -1.1 against model windows; at
    # 0.75: -0.5, and the corpus's paraphrases and LongMemEval_S as at 1.0 (0.6 and below lose one of each).
    window_vector_weight: float = 0.75
    # Measured signals (`storage.priors`), off unless they gain without a loss: what the vector leg
    # embeds of the query (`raw`, `content`: without question scaffolding, `mean`: both averaged); a
    # lean towards newer chats when the query asks for the latest state; a lean towards long messages and
    # ones that state a decision.
    query_form: str = "raw"
    recency: float = 0.0
    importance: float = 0.0
    # Round two, fourth session (`storage.expansion`), off unless measured to gain without a loss:
    # pseudo-relevance feedback (the first pass's best `feedback_units` units' `feedback_terms` strongest
    # words join a second keyword pass at up to `feedback_weight`), query terms in more than
    # `common_share` of the units weighed `common_weight` in the keyword leg, and each chat's n-th unit
    # after the first `diversity_free` keeping (1 - chat_diversity) ** (n - diversity_free) of its score.
    feedback_terms: int = 0
    feedback_units: int = 5
    feedback_weight: float = 0.3
    common_share: float = 0.0
    common_weight: float = 0.3
    chat_diversity: float = 0.0
    diversity_free: int = 1  # a chat's first units that keep their whole score
    # Each unit gains this share × the share of the legs (messages and windows, each leg) whose first
    # `agreement_depth` units hold its chat.
    chat_agreement: float = 0.0
    agreement_depth: int = 10
    # Round two, fifth session (`storage.expansion.sub_queries`), off: a question joining two things is
    # searched whole and once per thing, merged by `split_merge` ("interleave", "max", "rrf"; "" = off);
    # `split_legs` "keyword" searches the parts by keywords only (no second query embedding).
    split_merge: str = ""
    split_legs: str = "both"


SHIPPED = Fusion()
PLAIN_RRF = Fusion(k=60, identifier_keyword_weight=1.0, chat_boost=0.0, keyword_coverage=0.0, window_weight=0.0)
MATCHES_PER_CHAT = 3
# Messages read around a match before trimming it to a question and its answer.
REACH = 2
NO_FILTERS = Filters()

Window = tuple[int, int, list[str]]  # first index, last index, matched message ids
# The windows' shape as the chunker builds them: `size` messages, one window starting every `stride`.
WINDOW_SIZE, WINDOW_STRIDE = ChunkOptions().window_size, ChunkOptions().window_stride
# A window from the message hits (`Fusion.window_keywords` "members"): its chat, first index, keyword
# score, the query stems its messages hold, and the ids of the messages the hits name (by index).
MemberWindow = tuple[str, int, float, set[str], dict[int, str]]
# One leg's ranking of one coarse kind: its hits, the leg's weight, and per-unit factors (or None).
CoarseLeg = tuple[list[UnitHit], float, dict[str, float] | None]


@dataclass(frozen=True)
class RankedUnit:
    """A retrieval unit in fused rank order (before grouping by chat)."""

    chunk_id: str
    conversation_id: str
    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    score: float


@dataclass
class Ranking:
    """The fused units of one query, with the evidence each chat gave."""

    fused: list[tuple[str, float]]
    units: dict[str, UnitHit]
    evidence: dict[str, ChatEvidence]
    weights: TermWeights
    # Units some leg found on their own (not only through a window around them): the ones shown.
    direct: frozenset[str] = frozenset()


def relative_similarity(hits: Sequence[UnitHit], power: float) -> dict[str, float] | None:
    """Each hit's similarity over the best one's, to the given power (None when off or not comparable)."""
    top = max((hit.similarity or 0.0 for hit in hits), default=0.0)
    if power <= 0 or top <= 0:
        return None
    return {hit.chunk_id: (max(hit.similarity or 0.0, 0.0) / top) ** power for hit in hits}


class SearchEngine:
    def __init__(self, store: LanceStore, keywords: KeywordIndex, embedder: Embedder | None):
        self.store = store
        self.keywords = keywords
        self.embedder = embedder
        # Chats a delete committed to whose rows may still be indexed (`Library` sets it): never shown.
        self.hidden: Callable[[], frozenset[str]] = frozenset

    def effective_mode(self, mode: SearchMode) -> tuple[SearchMode, list[str]]:
        """The legs that can answer `mode`, with a note when that is fewer than asked."""
        if mode not in SEARCH_MODES:  # a caller's mistake: said plainly, before any work
            raise ValueError(f"unknown search mode {mode!r}: use one of {', '.join(SEARCH_MODES)}")
        if self.embedder is None and mode != "keyword":
            return "keyword", [
                "keyword-only results: the embedding model could not be loaded (the user can install it with "
                "`pastchats model install`)"
            ]
        return mode, []

    def rank(
        self,
        query: str,
        *,
        limit: int = 50,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
        second: Feedback | None = None,
    ) -> Ranking:
        """Both legs, fused, with the evidence every chat in either leg gave (`second`: the pass after
        pseudo-relevance feedback, with the words it adds and the first pass's vector hits)."""
        mode, _ = self.effective_mode(mode)
        if fusion.split_merge and second is None and (parts := sub_queries(query)):
            whole = replace(fusion, split_merge="")
            modes: dict[bool, SearchMode] = {False: mode, True: "keyword" if fusion.split_legs == "keyword" else mode}
            return split_ranking(
                lambda text, part: self.rank(text, limit=limit, mode=modes[part], filters=filters, fusion=whole),
                query, parts, fusion.split_merge, fusion.k,
            )  # fmt: skip
        analysed = analyse(query)
        if analysed.is_empty:
            return Ranking([], {}, {}, TermWeights({}), frozenset())
        depth = max(limit, LEG_DEPTH)
        wanted = {WINDOW: fusion.window_weight > 0, CHAT: fusion.chat_doc_weight > 0}
        vector_leg: Future[list[UnitHit]] | None = None
        if second is not None and second.vector_hits is not None:
            vector_leg = Future()
            vector_leg.set_result(second.vector_hits)
        elif mode in ("hybrid", "vector") and self.embedder is not None:
            # The model runs without the GIL: the query is embedded (and the vector leg scanned) on a
            # worker while this thread runs the keyword leg and its coverage.
            reach = depth * (VECTOR_OVERFETCH if any(wanted.values()) else 1)
            threads = HYBRID_SCAN_THREADS if mode == "hybrid" and analysed.terms else SCAN_THREADS
            vector_leg = _WORKERS.submit(self._vector_hits, analysed.text, fusion.query_form, reach, filters, threads)
        reader = self.keywords.reader()
        weights = self._weights(analysed, reader)
        boosts = common_term_boosts(weights, fusion.common_share, fusion.common_weight)
        if second is not None:
            boosts.update(second.boosts)
        scoring: TermWeights | ExpandedWeights = weights if second is None else second.weights
        evidence: dict[str, ChatEvidence] = {}
        legs: list[list[UnitHit]] = []
        leg_weights: list[float] = []
        unit_weights: list[dict[str, float] | None] = []
        # Legs over the coarse units, by kind: each a list of (hits, weight, per-unit factors).
        coarse: dict[str, list[CoarseLeg]] = {WINDOW: [], CHAT: []}
        # Windows scored from the message hits (where the store has windows at all).
        members = False
        member_windows: list[MemberWindow] = []
        keyword_hits: list[UnitHit] = []
        keyword_weight = fusion.keyword_weight
        if mode in ("hybrid", "keyword"):
            members = wanted[WINDOW] and fusion.window_keywords == "members" and self.keywords.holds(WINDOW, reader)
            # Every Tantivy search first, while the worker embeds the query (native code, no GIL wanted):
            # a search lets go of the GIL and, beside Python on the worker, waits for it again. Then
            # the documents and their coverage (Python) while the worker scans (`KeywordIndex.find`).
            scored_messages = self.keywords.find_scored(analysed, depth, filters, boosts, reader)
            found_exact = self.keywords.find_phrases(analysed, depth, filters, reader)
            found_coarse = {
                kind: self.keywords.find(analysed, LEG_DEPTH, filters, kind, boosts, reader)
                for kind in (WINDOW, CHAT)
                if wanted[kind] and not (kind == WINDOW and members)
            }
            hits = self.keywords.read([address for _, address in scored_messages], reader)
            factors: dict[str, float] = {}
            presents: list[set[str]] = []
            for hit in hits:
                present = weights.present(hit.text or "")
                coverage = weights.share(present)
                evidence.setdefault(hit.conversation_id, ChatEvidence()).add(coverage=coverage)
                if scoring is not weights:
                    coverage = scoring.coverage(hit.text or "")
                presents.append(present)
                factors[hit.chunk_id] = keyword_factor(coverage, fusion.keyword_coverage, fusion.keyword_coverage_power)
            legs.append(hits)
            keyword_hits = hits
            keyword_weight = fusion.identifier_keyword_weight if analysed.has_identifier else fusion.keyword_weight
            leg_weights.append(keyword_weight)
            unit_weights.append(factors)
            exact = self.keywords.read(found_exact, reader)
            for hit in exact:
                evidence.setdefault(hit.conversation_id, ChatEvidence()).add(exact=True)
            if exact:  # chunks holding an identifier word for word rank as a list of their own
                legs.append(exact)
                leg_weights.append(1.0)
                unit_weights.append(None)
            if members:
                member_windows = self._member_windows(hits, [score for score, _ in scored_messages], presents)
            for kind in (WINDOW, CHAT):
                if wanted[kind] and kind in found_coarse:
                    found = self.keywords.read(found_coarse[kind], reader)
                    # the same coverage rule as for messages: a window holding only the query's common
                    # words must not outrank one message holding its rare ones
                    damped = (
                        {
                            hit.chunk_id: keyword_factor(
                                scoring.coverage(hit.text or ""), fusion.keyword_coverage, fusion.coarse_coverage_power
                            )
                            for hit in found
                        }
                        if fusion.coarse_coverage
                        else None
                    )
                    coarse[kind].append((found, keyword_weight, damped))
        vector_hits = vector_leg.result() if vector_leg is not None else None
        if vector_hits is not None:
            by_kind: dict[str, list[UnitHit]] = {MESSAGE: [], WINDOW: [], CHAT: []}
            for hit in vector_hits:
                by_kind[kind_of(hit.chunk_id)].append(hit)
            hits = by_kind[MESSAGE][:depth]
            for hit in hits:
                evidence.setdefault(hit.conversation_id, ChatEvidence()).add(similarity=hit.similarity)
            legs.append(hits)
            leg_weights.append(fusion.vector_weight)
            unit_weights.append(None)
            for kind in (WINDOW, CHAT):
                if wanted[kind]:
                    found = by_kind[kind][:LEG_DEPTH]
                    scaled = relative_similarity(found, fusion.window_similarity_power) if kind == WINDOW else None
                    weight = fusion.vector_weight * (fusion.window_vector_weight if kind == WINDOW else 1.0)
                    coarse[kind].append((found, weight, scaled))
        if member_windows:
            vector_windows = coarse[WINDOW][0][0] if coarse[WINDOW] else []
            windows, damped = self._member_window_hits(member_windows, vector_windows, scoring, keyword_hits, fusion)
            coarse[WINDOW].insert(0, (windows, keyword_weight, damped))
        units = {hit.chunk_id: hit for leg in legs for hit in leg}
        direct = frozenset(units)
        fused = self._fuse(legs, leg_weights, unit_weights, fusion.k)
        if coarse[WINDOW]:
            fused = self._window_boost(fused, units, coarse[WINDOW], fusion.window_weight, fusion.k)
        if coarse[CHAT]:
            fused = self._chat_document_boost(fused, units, coarse[CHAT], fusion.chat_doc_weight, fusion.k)
        if fusion.neighbour_share:
            fused = self._neighbour_boost(fused, units, fusion.neighbour_share)
        if fusion.chat_boost:
            fused = self._chat_boost(fused, units, fusion.chat_boost, fusion.chat_units)
        if fusion.recency and asks_for_latest(analysed.text):
            chats = list(dict.fromkeys(units[cid].conversation_id for cid, _ in fused[:depth]))
            last_at = {chat: span[1] for chat, span in self.store.message_spans(chats).items()}
            fused = recency_prior(fused, units, last_at, fusion.recency)
        if fusion.importance:
            spans: dict[str, list[tuple[int, int]]] = {}
            for cid, _ in fused[:depth]:
                spans.setdefault(units[cid].conversation_id, []).append((units[cid].first_index, units[cid].last_index))
            held = self.store.message_windows(spans)
            fused = importance_prior(fused, units, held, fusion.importance, depth)
        if fusion.chat_agreement:
            leg_hits = legs + [hits for hits, _, _ in coarse[WINDOW]]
            tops = [{hit.conversation_id for hit in hits[: fusion.agreement_depth]} for hits in leg_hits]
            chat_of = {cid: units[cid].conversation_id for cid, _ in fused}
            fused = agreement_boost(fused, chat_of, tops, fusion.chat_agreement)
        if fusion.chat_diversity:
            chat_of = {cid: units[cid].conversation_id for cid, _ in fused}
            fused = diversified(fused, chat_of, fusion.chat_diversity, fusion.diversity_free)
        if fusion.feedback_terms and second is None and mode != "vector":
            more = feedback(
                self.keywords, analysed, fused, weights, fusion.feedback_units, fusion.feedback_terms,
                fusion.feedback_weight, vector_hits,
            )  # fmt: skip
            if more.boosts:
                return self.rank(query, limit=limit, mode=mode, filters=filters, fusion=fusion, second=more)
        return Ranking(fused, units, evidence, weights, direct)

    def _vector_hits(self, text: str, form: str, reach: int, filters: Filters, threads: int) -> list[UnitHit]:
        return self.store.vector_search(self._query_vector(text, form), reach, filters, threads)

    def _query_vector(self, text: str, form: str) -> Vectors:
        assert self.embedder is not None
        if form == "raw":
            return self.embedder.embed_query(text)
        content = content_text(text)
        if form == "content" or content == text:
            return self.embedder.embed_query(content)
        both = self.embedder.embed_query(text) + self.embedder.embed_query(content)
        mean: Vectors = (both / np.linalg.norm(both)).astype(np.float32)
        return mean

    def _weights(self, analysed: AnalysedQuery, reader: Any = None) -> TermWeights:
        total, freqs = self.keywords.doc_freqs(analysed.terms, reader)
        return TermWeights.of(analysed, total, freqs)

    @staticmethod
    def _fuse(
        legs: list[list[UnitHit]], weights: list[float], unit_weights: list[dict[str, float] | None], k: int
    ) -> list[tuple[str, float]]:
        """RRF, where a leg may scale its units one by one (the keyword leg, by the words each holds)."""
        if all(factors is None for factors in unit_weights):
            return rrf([[hit.chunk_id for hit in leg] for leg in legs], k=k, weights=weights)
        scores: dict[str, float] = {}
        for leg, weight, factors in zip(legs, weights, unit_weights, strict=True):
            for rank, hit in enumerate(leg, start=1):
                factor = 1.0 if factors is None else factors.get(hit.chunk_id, 1.0)
                scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight * factor / (k + rank)
        return sorted(scores.items(), key=SCORE, reverse=True)

    @staticmethod
    def _member_windows(
        hits: Sequence[UnitHit], scores: Sequence[float], presents: Sequence[set[str]]
    ) -> list[MemberWindow]:
        """The windows holding the message leg's hits, best first: each scores the sum of its messages'
        best BM25 scores (a message's passages count once, by the best) and holds the stems its hits
        hold; at most LEG_DEPTH."""
        best: dict[tuple[str, int], float] = {}
        for hit, score in zip(hits, scores, strict=True):
            key = (hit.conversation_id, hit.first_index)
            best[key] = max(best.get(key, 0.0), score)
        windows: dict[tuple[str, int], MemberWindow] = {}
        for hit, present in zip(hits, presents, strict=True):
            chat, index = hit.conversation_id, hit.first_index
            # the windows [first, first + size) with first a multiple of the stride that hold `index`
            last_first = index - index % WINDOW_STRIDE
            for first in range(last_first, max(index - WINDOW_SIZE, -1), -WINDOW_STRIDE):
                window = windows.get((chat, first))
                if window is None:
                    window = windows[(chat, first)] = (chat, first, 0.0, set(), {})
                ids = window[4]
                if index not in ids:
                    ids[index] = hit.message_ids[0] if hit.message_ids else ""
                    windows[(chat, first)] = window = (chat, first, window[2] + best[(chat, index)], window[3], ids)
                window[3].update(present)
        return sorted(windows.values(), key=itemgetter(2), reverse=True)[:LEG_DEPTH]

    @staticmethod
    def _member_window_hits(
        member_windows: list[MemberWindow],
        vector_windows: Sequence[UnitHit],
        scoring: TermWeights | ExpandedWeights,
        hits: Sequence[UnitHit],
        fusion: Fusion,
    ) -> tuple[list[UnitHit], dict[str, float] | None]:
        """The member windows as units (the vector leg's own unit where it found the same window: the
        same id, so the two legs' ranks add up) and their coverage factors."""
        known = {(hit.conversation_id, hit.first_index): hit for hit in vector_windows}
        texts: dict[tuple[str, int], list[str]] = {}
        if not isinstance(scoring, TermWeights):
            for hit in hits:
                texts.setdefault((hit.conversation_id, hit.first_index), []).append(hit.text or "")
        units: list[UnitHit] = []
        damped: dict[str, float] = {}
        for chat, first, _score, present, ids in member_windows:
            unit = known.get((chat, first))
            if unit is None:
                last = first + WINDOW_SIZE - 1
                # a message no hit names keeps an empty id until something reads it (`search_units`)
                held = tuple(ids.get(index, "") for index in range(first, last + 1))
                unit = UnitHit(f"{chat}\x1fw{first}-{last}", chat, first, last, held)
            units.append(unit)
            if isinstance(scoring, TermWeights):
                coverage = scoring.share(present)
            else:
                coverage = scoring.coverage("\n".join(t for i in ids for t in texts.get((chat, i), [])))
            damped[unit.chunk_id] = keyword_factor(coverage, fusion.keyword_coverage, fusion.coarse_coverage_power)
        return units, damped if fusion.coarse_coverage else None

    def search_units(
        self,
        query: str,
        *,
        limit: int = 50,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
    ) -> list[RankedUnit]:
        ranking = self.rank(query, limit=limit, mode=mode, filters=filters, fusion=fusion)
        units = ranking.units
        top = ranking.fused[:limit]
        # Messages that joined through a window built from the message hits carry no id yet: read them
        # (a window's message past the end of its chat does not exist and is left out).
        unnamed: dict[str, list[tuple[int, int]]] = {}
        for cid, _ in top:
            if not units[cid].message_ids:
                unnamed.setdefault(units[cid].conversation_id, []).append((units[cid].first_index,) * 2)
        named = {
            (chat, message.index): (message.id,)
            for chat, messages in (self.store.message_windows(unnamed) if unnamed else {}).items()
            for message in messages
        }
        ranked = []
        for cid, score in top:
            unit = units[cid]
            ids = unit.message_ids or named.get((unit.conversation_id, unit.first_index))
            if ids:
                ranked.append(RankedUnit(cid, unit.conversation_id, unit.first_index, unit.last_index, ids, score))
        return ranked

    @classmethod
    def _coarse_scores(cls, legs: list[CoarseLeg], k: int) -> tuple[dict[str, float], dict[str, UnitHit]]:
        """RRF over the legs of one coarse kind: unit id -> fused score, and the units themselves."""
        fused = cls._fuse([hits for hits, _, _ in legs], [w for _, w, _ in legs], [f for _, _, f in legs], k)
        return dict(fused), {hit.chunk_id: hit for hits, _, _ in legs for hit in hits}

    @classmethod
    def _window_boost(
        cls,
        fused: list[tuple[str, float]],
        units: dict[str, UnitHit],
        legs: list[CoarseLeg],
        share: float,
        k: int,
    ) -> list[tuple[str, float]]:
        """Each message gains `share` of its best window's score. A message no leg found on its own
        joins the candidates through its window: several messages that answer together rank together."""
        scores, windows = cls._coarse_scores(legs, k)
        best: dict[str, float] = {}
        for window_id, score in scores.items():
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

    @classmethod
    def _chat_document_boost(
        cls,
        fused: list[tuple[str, float]],
        units: dict[str, UnitHit],
        legs: list[CoarseLeg],
        share: float,
        k: int,
    ) -> list[tuple[str, float]]:
        """Each candidate message gains `share` of its chat document's score: a chat about the question
        as a whole lifts its messages above passing mentions elsewhere."""
        scores, documents = cls._coarse_scores(legs, k)
        by_chat = {documents[doc_id].conversation_id: score for doc_id, score in scores.items()}
        boosted = [(cid, score + share * by_chat.get(units[cid].conversation_id, 0.0)) for cid, score in fused]
        return sorted(boosted, key=SCORE, reverse=True)

    @staticmethod
    def _neighbour_boost(
        fused: list[tuple[str, float]], units: dict[str, UnitHit], share: float
    ) -> list[tuple[str, float]]:
        by_message: dict[tuple[str, int], float] = {}
        for chunk_id, score in fused:
            unit = units[chunk_id]
            key = (unit.conversation_id, unit.first_index)
            by_message[key] = max(by_message.get(key, 0.0), score)
        boosted = []
        for chunk_id, score in fused:
            unit = units[chunk_id]
            before = by_message.get((unit.conversation_id, unit.first_index - 1), 0.0)
            after = by_message.get((unit.conversation_id, unit.last_index + 1), 0.0)
            boosted.append((chunk_id, score + share * (before + after)))
        return sorted(boosted, key=SCORE, reverse=True)

    @staticmethod
    def _chat_boost(
        fused: list[tuple[str, float]], units: dict[str, UnitHit], boost: float, evidence_units: int
    ) -> list[tuple[str, float]]:
        evidence: dict[str, list[float]] = {}
        for chunk_id, score in fused:
            scores = evidence.setdefault(units[chunk_id].conversation_id, [])
            if len(scores) < evidence_units:
                scores.append(score)
        boosted = [
            (chunk_id, score + boost * sum(evidence[units[chunk_id].conversation_id])) for chunk_id, score in fused
        ]
        return sorted(boosted, key=SCORE, reverse=True)

    def search(
        self,
        query: str,
        *,
        max_results: int,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
    ) -> SearchResult:
        """Chats with strong evidence first, then weak ones, each group in fused rank order."""
        used_mode, notes = self.effective_mode(mode)
        ranking = self.rank(query, limit=SEARCH_DEPTH, mode=used_mode, filters=filters, fusion=fusion)
        units = ranking.units
        # Each chat's units in fused order; only the chats shown become `RankedUnit`s (below).
        in_chat: dict[str, list[tuple[str, float]]] = {}
        hidden = self.hidden()
        for pair in ranking.fused:
            chat = units[pair[0]].conversation_id
            if chat not in hidden:
                in_chat.setdefault(chat, []).append(pair)
        none = ChatEvidence()
        strengths: dict[str, Strength] = {}
        matching = 0
        for cid in in_chat:
            evidence = ranking.evidence.get(cid, none)
            strengths[cid] = evidence.strength(ranking.weights)
            matching += evidence.matches()
        chosen = strongest_first((cid, strengths[cid]) for cid in in_chat)[:max_results]
        metas = self.store.metas(chosen)
        chosen = [cid for cid in chosen if cid in metas]  # a chat deleted meanwhile is left out
        by_chat = {cid: self._shown_units(in_chat[cid], units, ranking.direct) for cid in chosen}
        reach = {cid: self._reach(metas[cid], by_chat[cid]) for cid in chosen}
        messages = self.store.message_windows(reach)
        spans = self.store.message_spans(chosen)
        chats = []
        for cid in chosen:
            by_index = {m.index: m for m in messages.get(cid, [])}
            windows = self._windows(by_chat[cid], by_index)
            chats.append(
                chat_hit(metas[cid], self._matches(windows, by_index), span=spans.get(cid), strength=strengths[cid])
            )
        return SearchResult(
            query=query, mode=used_mode, chats=chats, matching_chats=max(matching, len(chats)), notes=notes
        )

    @staticmethod
    def _shown_units(
        ranked: list[tuple[str, float]], units: dict[str, UnitHit], direct: frozenset[str]
    ) -> list[RankedUnit]:
        """The chat's units to show, best first: the messages that matched themselves (their neighbours
        come with them as answers); a message that ranks only through its window when nothing in its chat
        matched alone."""
        found = [pair for pair in ranked if pair[0] in direct] or [p for p in ranked if units[p[0]].message_ids]
        return [
            RankedUnit(cid, u.conversation_id, u.first_index, u.last_index, u.message_ids, score)
            for cid, score in found[:MATCHES_PER_CHAT]
            for u in (units[cid],)
        ]

    @staticmethod
    def _reach(meta: ConversationMeta, units: Sequence[RankedUnit]) -> list[tuple[int, int]]:
        """The message ranges to read around the chat's best units (trimmed by role afterwards)."""
        last = max(meta.message_count - 1, 0)
        return [(max(0, u.first_index - REACH), min(last, u.last_index + REACH)) for u in units[:MATCHES_PER_CHAT]]

    @staticmethod
    def _answering(first: int, last: int, messages: dict[int, Message]) -> tuple[int, int]:
        """Widen a match to a question and its answer: a user message gets the reply after it, any other
        message the user message before it. Without roles to go by, one message either side."""
        start, end = first, last
        if first in messages and messages[first].role != "user":
            for i in range(first - 1, first - REACH - 1, -1):
                if i in messages:
                    start = i
                    if messages[i].role == "user":
                        break
        if last in messages and messages[last].role == "user":
            for i in range(last + 1, last + REACH + 1):
                if i in messages:
                    end = i
                    if messages[i].role == "assistant":
                        break
        return start, end

    @classmethod
    def _windows(cls, units: Sequence[RankedUnit], messages: dict[int, Message]) -> list[Window]:
        """The chat's best units, each widened to a question and its answer; windows that overlap or touch
        merge. A merged window takes the place of the best window it absorbed; matched ids keep rank order.
        """
        windows: list[Window] = []
        for unit in units[:MATCHES_PER_CHAT]:
            first, last = cls._answering(unit.first_index, unit.last_index, messages)
            merged: Window = (first, last, list(unit.message_ids))
            position = len(windows)
            remaining: list[Window] = []
            for window in windows:
                if merged[0] <= window[1] + 1 and merged[1] >= window[0] - 1:
                    position = min(position, len(remaining))
                    ids = window[2] + [m for m in merged[2] if m not in window[2]]
                    merged = (min(merged[0], window[0]), max(merged[1], window[1]), ids)
                else:
                    remaining.append(window)
            remaining.insert(position, merged)
            windows = remaining
        return windows

    @staticmethod
    def _matches(windows: list[Window], messages: dict[int, Message]) -> list[Match]:
        matches = []
        for first, last, ids in windows:
            matched = set(ids)
            rows = [shown(messages[i], matched) for i in range(first, last + 1) if i in messages]
            if rows:
                matches.append(Match(message_ids=ids, first_index=first, last_index=last, messages=rows))
        return matches
