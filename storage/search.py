"""Hybrid search: both legs under the same filters, fused with RRF, grouped by chat, expanded to context."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from storage.embedder import Embedder
from storage.filters import Filters
from storage.fusion import rrf
from storage.keyword_index import KeywordIndex
from storage.lance_store import ConversationMeta, LanceStore, UnitHit
from storage.models import Message
from storage.query import analyse
from storage.results import ChatHit, Match, SearchMode, SearchResult, ShownMessage

log = logging.getLogger(__name__)

LEG_DEPTH = 100  # candidates each leg contributes to the fusion


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


SHIPPED = Fusion()
PLAIN_RRF = Fusion(k=60, identifier_keyword_weight=1.0, chat_boost=0.0)
MATCHES_PER_CHAT = 3
CONTEXT_BEFORE = 1
CONTEXT_AFTER = 1
NO_FILTERS = Filters()

Window = tuple[int, int, list[str]]  # first index, last index, matched message ids


@dataclass(frozen=True)
class RankedUnit:
    """A retrieval unit in fused rank order (before grouping by chat)."""

    chunk_id: str
    conversation_id: str
    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    score: float


def chat_hit(meta: ConversationMeta, matches: list[Match] | None = None) -> ChatHit:
    return ChatHit(
        uri=meta.id,
        title=meta.title,
        url=meta.url,
        source=meta.source,
        project=meta.project,
        created_at=meta.created_at,
        updated_at=meta.updated_at,
        message_count=meta.message_count,
        matches=matches or [],
    )


def shown(message: Message, matched: set[str]) -> ShownMessage:
    return ShownMessage(
        id=message.id,
        index=message.index,
        role=message.role,
        text=message.text,
        created_at=message.created_at,
        matched=message.id in matched,
    )


class SearchEngine:
    def __init__(self, store: LanceStore, keywords: KeywordIndex, embedder: Embedder | None):
        self.store = store
        self.keywords = keywords
        self.embedder = embedder

    def effective_mode(self, mode: SearchMode) -> tuple[SearchMode, list[str]]:
        if self.embedder is None and mode != "keyword":
            return "keyword", ["keyword-only results: the embedding model could not be loaded"]
        return mode, []

    def search_units(
        self,
        query: str,
        *,
        limit: int = 50,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
    ) -> list[RankedUnit]:
        mode, _ = self.effective_mode(mode)
        analysed = analyse(query)
        if analysed.is_empty:
            return []
        depth = max(limit, LEG_DEPTH)
        legs: list[list[UnitHit]] = []
        weights: list[float] = []
        if mode in ("hybrid", "keyword"):
            legs.append(self.keywords.search(analysed, depth, filters))
            weights.append(fusion.identifier_keyword_weight if analysed.has_identifier else fusion.keyword_weight)
            exact = self.keywords.search_phrases(analysed, depth, filters)
            if exact:  # chunks holding an identifier word for word rank as a list of their own
                legs.append(exact)
                weights.append(1.0)
        if mode in ("hybrid", "vector") and self.embedder is not None:
            vector = self.embedder.embed_query(analysed.text)
            legs.append(self.store.vector_search(vector, depth, filters))
            weights.append(fusion.vector_weight)
        units = {hit.chunk_id: hit for leg in legs for hit in leg}
        fused = rrf([[hit.chunk_id for hit in leg] for leg in legs], k=fusion.k, weights=weights)
        if fusion.neighbour_share:
            fused = self._neighbour_boost(fused, units, fusion.neighbour_share)
        if fusion.chat_boost:
            fused = self._chat_boost(fused, units, fusion.chat_boost, fusion.chat_units)
        return [
            RankedUnit(
                chunk_id=cid,
                conversation_id=units[cid].conversation_id,
                first_index=units[cid].first_index,
                last_index=units[cid].last_index,
                message_ids=units[cid].message_ids,
                score=score,
            )
            for cid, score in fused[:limit]
        ]

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
        return sorted(boosted, key=lambda pair: pair[1], reverse=True)

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
        return sorted(boosted, key=lambda pair: pair[1], reverse=True)

    def search(
        self,
        query: str,
        *,
        max_results: int,
        mode: SearchMode = "hybrid",
        filters: Filters = NO_FILTERS,
        fusion: Fusion = SHIPPED,
    ) -> SearchResult:
        used_mode, notes = self.effective_mode(mode)
        units = self.search_units(query, limit=LEG_DEPTH * 2, mode=used_mode, filters=filters, fusion=fusion)
        by_chat: dict[str, list[RankedUnit]] = {}
        for unit in units:
            by_chat.setdefault(unit.conversation_id, []).append(unit)
        chosen = list(by_chat)[:max_results]
        metas = self.store.metas(chosen)
        chosen = [cid for cid in chosen if cid in metas]  # a chat deleted meanwhile is left out
        windows = {cid: self._windows(metas[cid], by_chat[cid]) for cid in chosen}
        messages = self.store.message_windows({cid: [(f, last) for f, last, _ in w] for cid, w in windows.items()})
        chats = []
        for cid in chosen:
            by_index = {m.index: m for m in messages.get(cid, [])}
            chats.append(chat_hit(metas[cid], self._matches(windows[cid], by_index)))
        return SearchResult(query=query, mode=used_mode, chats=chats, notes=notes)

    @staticmethod
    def _windows(meta: ConversationMeta, units: Sequence[RankedUnit]) -> list[Window]:
        """The chat's best units, each widened to its neighbours; windows that overlap or touch merge.

        A merged window takes the place of the best window it absorbed; matched ids keep rank order.
        """
        windows: list[Window] = []
        for unit in units[:MATCHES_PER_CHAT]:
            first = max(0, unit.first_index - CONTEXT_BEFORE)
            last = min(meta.message_count - 1, unit.last_index + CONTEXT_AFTER)
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
