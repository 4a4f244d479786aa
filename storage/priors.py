"""Signals beside the two legs, each measured before it may change a ranking (docs/BENCHMARKS.md).

- query form: what the vector leg embeds. Passages are statements ("User: I painted a sunset"); a
  question's scaffolding ("what did ... recently?") is words no passage holds.
- recency: a query that asks for the latest state of something ("what do I use now", "what did we end
  up choosing") prefers newer chats, mildly.
- importance: long messages and ones that state a decision carry more of what a chat settled.

Each is a `Fusion` field that is off (or `raw`) unless the benchmarks show a gain without a loss.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from storage.lance_store import UnitHit
from storage.models import Message
from storage.query import META_WORDS

QUERY_FORMS = ("raw", "content", "mean")

# Question scaffolding: the words that make a statement a question.
_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were has have had can could would "
    "should will shall may might".split()
)
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")

# "latest", "currently", "now", "ended up", "these days": the query wants the state as it is now.
_RECENCY_CUE = re.compile(
    r"\b(latest|current|currently|now|nowadays|these days|end(?:ed)? up|most recent(?:ly)?|recently|"
    r"any ?more|so far|at the moment|right now|final(?:ly)?)\b",
    re.IGNORECASE,
)
# A message that says what was chosen or settled.
_DECISION = re.compile(
    r"\b(decided|decide|decision|chose|chosen|choose|going with|go with|went with|settled on|picked|"
    r"switched to|agreed|we'll use|i'll use|plan is|final(?:ly)?)\b",
    re.IGNORECASE,
)
IMPORTANT_WORDS = 120  # a message this long or longer counts as fully long


def content_text(query: str) -> str:
    """The query without its question scaffolding and meta words ("what did we discuss about X" -> "X")."""
    kept = []
    for token in _TOKEN.findall(query):
        bare = _EDGE_PUNCT.sub("", token).lower()
        if bare and (bare in _QUESTION_WORDS or bare in META_WORDS):
            continue
        kept.append(token.rstrip("?"))
    text = " ".join(word for word in kept if word)
    return text or query


def asks_for_latest(query: str) -> bool:
    return _RECENCY_CUE.search(query) is not None


def recency_prior(
    fused: list[tuple[str, float]], units: Mapping[str, UnitHit], last_at: Mapping[str, datetime], weight: float
) -> list[tuple[str, float]]:
    """Each unit's score times 1 + `weight` × its chat's place in time among the candidate chats
    (0 for the oldest, 1 for the newest): a mild lean, not a sort by date."""
    chats = sorted({units[cid].conversation_id for cid, _ in fused if units[cid].conversation_id in last_at})
    ordered = sorted(chats, key=lambda chat: last_at[chat])
    if len(ordered) < 2:
        return fused
    place = {chat: i / (len(ordered) - 1) for i, chat in enumerate(ordered)}
    boosted = [(cid, score * (1 + weight * place.get(units[cid].conversation_id, 0.0))) for cid, score in fused]
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)


def importance(messages: list[Message]) -> float:
    """0..1: half for length (up to `IMPORTANT_WORDS` words), half for stating a decision."""
    text = " ".join(m.text for m in messages)
    length = min(1.0, len(text.split()) / IMPORTANT_WORDS)
    return 0.5 * length + (0.5 if _DECISION.search(text) else 0.0)


def importance_prior(
    fused: list[tuple[str, float]],
    units: Mapping[str, UnitHit],
    messages: Mapping[str, list[Message]],
    weight: float,
    depth: int,
) -> list[tuple[str, float]]:
    """The first `depth` units' scores times 1 + `weight` × their importance; the rest keep theirs."""
    boosted = []
    for position, (cid, score) in enumerate(fused):
        if position < depth:
            unit = units[cid]
            held = [m for m in messages.get(unit.conversation_id, []) if unit.first_index <= m.index <= unit.last_index]
            score *= 1 + weight * importance(held)
        boosted.append((cid, score))
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)
