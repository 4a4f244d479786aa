"""`SearchEngine`: a query through the stages of a search.

`rank`: both legs under the same filters (`legs`) → fused by weighted RRF → each message lifted by its
best exchange window → each unit lifted by its chat's best (`fusion`).
`search`: `rank` → by chat, hidden chats out → each chat's strength (`storage.evidence`) → the chosen
chats, strong ones first → what each shows (`shown`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import get_args

from storage.embedding.embedder import Embedder
from storage.embedding.model_files import install_hint
from storage.evidence import (
    RELATED_MEANING,
    ChatEvidence,
    TermWeights,
    newest_first,
    same_question,
    spellings,
    strongest_first,
)
from storage.models import Message
from storage.query.analysis import AnalysedQuery, analyse
from storage.query.filters import Filters
from storage.reads.catalog_view import CatalogView
from storage.reads.chat_meta import ConversationMeta, chat_hit
from storage.reads.results import ChatHit, Evidence, OtherChat, SearchMode, SearchResult
from storage.search import shown
from storage.search.fusion import SHIPPED, Fused, Fusion, chat_boost, rrf, window_boost
from storage.search.legs import (
    LEG_DEPTH,
    VECTOR_OVERFETCH,
    Legs,
    add_titles,
    grammar_kept,
    holds_phrases,
    keyword_leg,
    member_window_leg,
    vector_leg,
    without_chats,
)
from storage.search.shown import RankedUnit
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import LanceStore, UnitHit
from storage.stores.vector_matrix import SCAN_THREADS
from storage.times import utc
from storage.units.windows import message_chunk_id

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)  # the modes a search accepts
MORE_CHATS = 5  # strong chats beyond those shown that a result names
# Why a weak chat is strong when it joins a strong chat on the same question that it is newer than.
NEWER_WORD = "newer than a strong chat on the same question"
NO_FILTERS = Filters()
# A query of only exclusions (-word) has nothing to rank: said with the empty result.
ONLY_EXCLUDED = (
    "The query only says what to leave out (-word): add a word or a \"phrase\" to search for, e.g. 'deploy -docker'."
)

# Query embedding and the vector leg, beside the keyword leg (`SearchEngine._legs`).
_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pastchats-vector-leg")

# How deep `SearchEngine.search` reads each leg: the depth at which the quality tables are measured
# (bench/quality ranks `search_units(limit=100)`); 200 read twice the documents for chats ranked below
# anything shown.
SEARCH_DEPTH = LEG_DEPTH
# The scan's threads beside the keyword leg: two beat one (which left the keyword leg a core) once the
# float16 rows were read by `pread`, measured at load 3.7-8.
HYBRID_SCAN_THREADS = SCAN_THREADS


@dataclass
class Ranking:
    """The fused units of one query, with the evidence each chat gave."""

    fused: Fused
    units: dict[str, UnitHit]
    evidence: dict[str, ChatEvidence]
    weights: TermWeights
    # Units some leg found on their own (not only through a window around them): the ones shown.
    direct: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()  # what the query's grammar did that it may not have meant


class SearchEngine:
    def __init__(self, store: LanceStore, keywords: KeywordIndex, embedder: Embedder | None, chats: CatalogView):
        self.store = store
        self.chats = chats  # what results show of each chat: the catalog, never LanceDB
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
                f"keyword-only results: the embedding model could not be loaded (installing it: {install_hint()})"
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
    ) -> Ranking:
        """Both legs, fused, with the evidence every chat in either leg gave."""
        mode, _ = self.effective_mode(mode)
        analysed = analyse(query)
        notes = analysed.notes + ((ONLY_EXCLUDED,) if analysed.only_excluded else ())
        if analysed.is_empty:
            return Ranking([], {}, {}, TermWeights({}), frozenset(), notes)
        legs = self._legs(analysed, max(limit, LEG_DEPTH), mode, filters, fusion)
        units = {hit.chunk_id: hit for leg in legs.messages for hit in leg.hits}
        direct = frozenset(units)
        fused = rrf(legs.messages, fusion.k)
        if legs.windows:
            fused = window_boost(fused, units, legs.windows, fusion.window_weight, fusion.k)
        if fusion.chat_boost:
            fused = chat_boost(fused, units, fusion.chat_boost)
        return Ranking(fused, units, legs.evidence, legs.weights, direct, notes)

    def _legs(self, analysed: AnalysedQuery, depth: int, mode: SearchMode, filters: Filters, fusion: Fusion) -> Legs:
        """Both legs at once: the model runs without the GIL, so the query is embedded (and the vector leg
        scanned) on a worker while this thread runs the keyword leg and its coverage."""
        vector: Future[list[UnitHit]] | None = None
        if mode in ("hybrid", "vector") and self.embedder is not None:
            reach = depth * (VECTOR_OVERFETCH if fusion.window_weight > 0 else 1)
            threads = HYBRID_SCAN_THREADS if mode == "hybrid" and analysed.terms else SCAN_THREADS
            vector = _WORKERS.submit(self._vector_hits, analysed.text, reach, filters, threads)
        reader = self.keywords.reader()
        total, freqs = self.keywords.doc_freqs(analysed.terms, reader)
        legs = Legs(TermWeights.of(analysed, total, freqs))
        if mode in ("hybrid", "keyword"):
            keyword_leg(self.keywords, reader, legs, analysed, depth, filters, fusion, self._titles)
        if vector is not None:
            hits = vector.result()
            if analysed.grammar:  # only what holds every quoted phrase and no excluded word
                hits = grammar_kept(self.keywords, reader, hits, analysed)
            vector_leg(legs, hits, depth, fusion)
            add_titles(legs, list(legs.evidence), self._titles)  # the chats only the vector leg found
        if analysed.excluded:  # no chat holding an excluded word anywhere, whichever unit found it
            found = {hit.conversation_id for leg in (*legs.messages, *legs.windows) for hit in leg.hits}
            without_chats(legs, self.keywords.chats_holding(found | set(legs.evidence), analysed.excluded, reader))
        if legs.member_windows:
            member_window_leg(legs, fusion)
        return legs

    def _titles(self, chats: Collection[str]) -> dict[str, str]:
        return {cid: meta.title for cid, meta in self.chats.metas(list(chats)).items()}

    def _vector_hits(self, text: str, reach: int, filters: Filters, threads: int) -> list[UnitHit]:
        assert self.embedder is not None
        return self.store.vector_search(self.embedder.embed_query(text), reach, filters, threads)

    def search_units(
        self,
        query: str,
        *,
        limit: int = 50,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
    ) -> list[RankedUnit]:
        """The fused units themselves, best first (what the quality harness scores)."""
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
            for chat, messages in (self.chats.message_windows(unnamed) if unnamed else {}).items()
            for message in messages
        }
        ranked = []
        for cid, score in top:
            unit = units[cid]
            ids = unit.message_ids or named.get((unit.conversation_id, unit.first_index))
            if ids:
                ranked.append(RankedUnit(cid, unit.conversation_id, unit.first_index, unit.last_index, ids, score))
        return ranked

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
        in_chat = self._by_chat(ranking)
        none = ChatEvidence()
        strengths = {cid: ranking.evidence.get(cid, none).strength(ranking.weights)[0] for cid in in_chat}
        order = strongest_first((cid, strengths[cid]) for cid in in_chat)
        strong = [cid for cid in order if strengths[cid] == "strong"]
        metas = self.chats.metas(strong[: max_results + MORE_CHATS] + order[: max_results + MORE_CHATS])
        order, newer, joined = self._latest_first(order, strong, metas, ranking, in_chat)
        strengths |= dict.fromkeys(joined, "strong")
        chosen = order[:max_results]
        others = [cid for cid in order[max_results:] if strengths[cid] == "strong"][:MORE_CHATS]
        metas |= self.chats.metas([cid for cid in chosen + others if cid not in metas])
        chosen = [cid for cid in chosen if cid in metas]  # a chat deleted meanwhile is left out
        chats = self._shown(chosen, metas, in_chat, ranking, joined)
        for hit in chats:
            if hit.evidence is not None and (later := metas.get(newer.get(hit.uri, ""))) is not None:
                hit.evidence.newer = f"{later.title} ({later.updated_at.date().isoformat()})"
        return SearchResult(
            query=query,
            mode=used_mode,
            chats=chats,
            matching_chats=sum(strength == "strong" for strength in strengths.values()),
            others=[
                OtherChat(uri=cid, title=metas[cid].title, number=ranking.units[in_chat[cid][0][0]].first_index + 1)
                for cid in others
                if cid in metas
            ],
            notes=notes + list(ranking.notes),
        )

    def _latest_first(
        self,
        order: list[str],
        strong: list[str],
        metas: dict[str, ConversationMeta],
        ranking: Ranking,
        in_chat: dict[str, Fused],
    ) -> tuple[list[str], dict[str, str], set[str]]:
        """Chats on the same question (the same query words, the same project when both have one) newest
        first (`storage.evidence.newest_first`), among the chats a result may show; a weak chat joins a
        strong one it is newer than."""
        if not strong:
            return order, {}, set()
        none = ChatEvidence()
        holding = {cid for cid in metas if cid not in strong and ranking.evidence.get(cid, none).present}

        def same(a: str, b: str) -> bool:
            projects = metas[a].project, metas[b].project
            if None not in projects and projects[0] != projects[1]:
                return False
            evidence = ranking.evidence
            return same_question(evidence.get(a, none), evidence.get(b, none), ranking.weights, strong=b in strong)

        candidates = [cid for cid in strong if cid in metas]
        return newest_first(
            order, candidates, holding, same, self._answered_at([*candidates, *holding], metas, ranking, in_chat)
        )

    def _answered_at(
        self, chats: list[str], metas: dict[str, ConversationMeta], ranking: Ranking, in_chat: dict[str, Fused]
    ) -> dict[str, datetime]:
        """When each chat answered: the time of the message that holds most of the query's words (else of
        its best match; its chat's last update when the source gave no time). A long chat updated last
        week may have settled the question a year ago."""
        none = ChatEvidence()
        best = {}
        for cid in chats:
            covering = ranking.evidence.get(cid, none).covering
            best[cid] = ranking.units[in_chat[cid][0][0]].first_index if covering is None else covering
        read = self.chats.message_windows({cid: [(index, index)] for cid, index in best.items()})
        when = {cid: metas[cid].updated_at for cid in chats}
        for cid, messages in read.items():
            written = next((m.created_at for m in messages if m.created_at is not None), None)
            if written is not None:
                when[cid] = utc(written)
        return when

    def _by_chat(self, ranking: Ranking) -> dict[str, Fused]:
        """Each chat's units in fused order, chats in the order of their best unit, hidden chats left out."""
        in_chat: dict[str, Fused] = {}
        hidden = self.hidden()
        for pair in ranking.fused:
            chat = ranking.units[pair[0]].conversation_id
            if chat not in hidden:
                in_chat.setdefault(chat, []).append(pair)
        return in_chat

    def _shown(
        self,
        chosen: list[str],
        metas: dict[str, ConversationMeta],
        in_chat: dict[str, Fused],
        ranking: Ranking,
        joined: set[str],
    ) -> list[ChatHit]:
        """The chosen chats as results show them: each chat's best units widened to a question and its
        answer, read in one pass over the store, with the evidence of its strength (`joined`: weak chats
        made strong by a strong chat on the same question they are newer than)."""
        weights = ranking.weights
        by_chat = {cid: shown.shown_units(in_chat[cid], ranking.units, ranking.direct, weights) for cid in chosen}
        messages = self.chats.message_windows({cid: shown.reach(metas[cid], by_chat[cid]) for cid in chosen})
        spans = self.chats.message_spans(chosen)
        none = ChatEvidence()
        chats = []
        for cid in chosen:
            by_index = {m.index: m for m in messages.get(cid, [])}

            def meant(message: Message, chat: str = cid) -> bool:
                """Whether a message itself holds a query word (a quoted one only in its phrase), or is
                related in meaning to the query."""
                held = weights.present(message.text).intersection(weights.weights)
                if held - weights.phrase_terms:
                    return True
                if weights.quoted_words and any(holds_phrases(message.text, (w,)) for w in weights.quoted_words):
                    return True
                unit = ranking.units.get(message_chunk_id(chat, message.index))
                return unit is not None and (unit.similarity or 0.0) >= RELATED_MEANING

            matches = shown.matches(shown.windows(by_chat[cid], by_index), by_index, meant)
            texts = [metas[cid].title, *(m.text for m in by_index.values())]
            verdict = ranking.evidence.get(cid, none).verdict(weights, spellings(weights, texts))
            if cid in joined:
                verdict = replace(verdict, strength="strong", why=NEWER_WORD)
            hit = chat_hit(metas[cid], matches, span=spans.get(cid), strength=verdict.strength)
            hit.evidence = Evidence(
                matched=list(verdict.matched),
                missing=list(verdict.missing),
                phrases=list(verdict.phrases),
                meaning=verdict.meaning,
                why=verdict.why,
            )
            chats.append(hit)
        return chats
