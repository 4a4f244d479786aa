"""What a result shows of a chat: its best units, each widened to a question and its answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storage.evidence import TermWeights
from storage.models import Message
from storage.reads.chat_meta import ConversationMeta, shown
from storage.reads.results import Match
from storage.stores.lance_store import UnitHit

MATCHES_PER_CHAT = 3
# The best units of a chat compared for near-duplicates, and how close in score a later one must be to
# take an earlier one's place.
CANDIDATES = 8
NEAR = 0.5
# Messages read around a match before trimming it to a question and its answer.
REACH = 2

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


def shown_units(
    ranked: list[tuple[str, float]], units: dict[str, UnitHit], direct: frozenset[str], weights: TermWeights
) -> list[RankedUnit]:
    """The chat's units to show, best first: the messages that matched themselves (their neighbours come
    with them as answers); a message that ranks only through its window when nothing in its chat matched
    alone. A match is left out for a later one in the chat holding the same query words or more
    (`later_kept`): a long chat shows how it ended, not the first of its near-duplicates."""
    found = [pair for pair in ranked if pair[0] in direct] or [p for p in ranked if units[p[0]].message_ids]
    kept = later_kept(found[:CANDIDATES], units, weights)
    return [
        RankedUnit(cid, u.conversation_id, u.first_index, u.last_index, u.message_ids, score)
        for cid, score in kept[:MATCHES_PER_CHAT]
        for u in (units[cid],)
    ]


def later_kept(
    found: list[tuple[str, float]], units: dict[str, UnitHit], weights: TermWeights
) -> list[tuple[str, float]]:
    """`found` less each unit that a later unit of the chat (at least `NEAR` of its score) holds the same
    query words as, or more: the shortlist at #4 gives way to the booking at #37 for "Lisbon hotel booked".
    Units without text (found by meaning alone) are compared by nothing and kept."""
    terms = weights.weights
    held = {
        cid: frozenset(weights.present(units[cid].text or "")).intersection(terms) if units[cid].text else None
        for cid, _ in found
    }
    kept = []
    for cid, score in found:
        words = held[cid]
        superseded = (
            words is not None
            and bool(words)
            and any(
                units[other].first_index > units[cid].first_index
                and other_score >= NEAR * score
                and (other_words := held[other]) is not None
                and other_words >= words
                for other, other_score in found
            )
        )
        if not superseded:
            kept.append((cid, score))
    return kept


def reach(meta: ConversationMeta, units: Sequence[RankedUnit]) -> list[tuple[int, int]]:
    """The message ranges to read around the chat's best units (trimmed by role afterwards)."""
    last = max(meta.message_count - 1, 0)
    return [(max(0, u.first_index - REACH), min(last, u.last_index + REACH)) for u in units[:MATCHES_PER_CHAT]]


def answering(first: int, last: int, messages: dict[int, Message]) -> tuple[int, int]:
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


def windows(units: Sequence[RankedUnit], messages: dict[int, Message]) -> list[Window]:
    """The chat's best units, each widened to a question and its answer; windows that overlap or touch
    merge. A merged window takes the place of the best window it absorbed; matched ids keep rank order."""
    merged_windows: list[Window] = []
    for unit in units[:MATCHES_PER_CHAT]:
        first, last = answering(unit.first_index, unit.last_index, messages)
        merged: Window = (first, last, list(unit.message_ids))
        position = len(merged_windows)
        remaining: list[Window] = []
        for window in merged_windows:
            if merged[0] <= window[1] + 1 and merged[1] >= window[0] - 1:
                position = min(position, len(remaining))
                ids = window[2] + [m for m in merged[2] if m not in window[2]]
                merged = (min(merged[0], window[0]), max(merged[1], window[1]), ids)
            else:
                remaining.append(window)
        remaining.insert(position, merged)
        merged_windows = remaining
    return merged_windows


def matches(windows: list[Window], messages: dict[int, Message], meant: Callable[[Message], bool]) -> list[Match]:
    """The windows as matches; a message is marked matched when a unit named it and it holds a query word
    or is related in meaning (`meant`), not for being a neighbour in a window that matched."""
    out = []
    for first, last, ids in windows:
        named = set(ids)
        matched = {m.id for i, m in messages.items() if first <= i <= last and m.id in named and meant(m)}
        rows = [shown(messages[i], matched) for i in range(first, last + 1) if i in messages]
        if rows:
            kept = [mid for mid in ids if mid in matched]
            out.append(Match(message_ids=kept, first_index=first, last_index=last, messages=rows))
    return out
