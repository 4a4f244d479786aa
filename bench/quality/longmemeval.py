"""LongMemEval_S as pastchats conversations: one fresh haystack per question, under opaque ids.

Session ids in the data give the label away (evidence sessions are named `answer_...`), so every
session is imported as `lme:s-<hash of question and position>` and only the scorer keeps the mapping.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from storage.models import Conversation, Message

Variant = Literal["user", "full"]
VARIANTS: tuple[Variant, ...] = ("user", "full")

_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?:\s*\([A-Za-z]+\))?\s*(\d{2}):(\d{2})")


@dataclass(frozen=True)
class Haystack:
    conversations: list[Conversation]
    session_of: dict[str, str]  # opaque conversation id -> original session id
    answer_turns: frozenset[tuple[str, str]]  # (conversation id, message id) of indexed has_answer turns


@dataclass(frozen=True)
class LmeQuestion:
    question_id: str
    question_type: str
    question: str
    gold_sessions: tuple[str, ...]
    abstention: bool
    strict: bool
    record: dict[str, Any]

    def haystack(self, variant: Variant) -> Haystack:
        return build_haystack(self.record, variant)


def parse_date(value: str) -> datetime:
    """ "2023/05/20 (Sat) 02:21" -> 2023-05-20 02:21 UTC."""
    match = _DATE.search(value)
    if match is None:
        raise ValueError(f"unrecognised LongMemEval date: {value!r}")
    year, month, day, hour, minute = (int(part) for part in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def opaque_id(question_id: str, position: int) -> str:
    digest = hashlib.blake2b(f"{question_id}\x00{position}".encode(), digest_size=8).hexdigest()
    return f"lme:s-{digest}"


def gold_sessions(record: dict[str, Any]) -> tuple[str, ...]:
    """The evidence sessions that really hold evidence (a `has_answer` turn); all labelled ones if none do.

    Upstream relabels an `answer_` session with no `has_answer` turn as a non-answer (one such session
    is in the dev split, gpt4_1e4a8aec); we do the same.
    """
    labelled = list(dict.fromkeys(record["answer_session_ids"]))
    sessions = dict(zip(record["haystack_session_ids"], record["haystack_sessions"], strict=True))
    holding = [sid for sid in labelled if any(t.get("has_answer") for t in sessions.get(sid, []))]
    return tuple(holding or labelled)


def evidence_in_user_turns(record: dict[str, Any]) -> bool:
    """Upstream's filter for the strict average: some evidence session has a `has_answer` user turn."""
    labelled = set(record["answer_session_ids"])
    return any(
        turn.get("has_answer") and turn["role"] == "user"
        for sid, session in zip(record["haystack_session_ids"], record["haystack_sessions"], strict=True)
        if sid in labelled
        for turn in session
    )


def build_haystack(record: dict[str, Any], variant: Variant) -> Haystack:
    conversations: list[Conversation] = []
    session_of: dict[str, str] = {}
    answer_turns: set[tuple[str, str]] = set()
    sessions = zip(record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"], strict=True)
    for position, (session_id, date, turns) in enumerate(sessions):
        conversation_id = opaque_id(record["question_id"], position)
        when = parse_date(date)
        kept = [(i, t) for i, t in enumerate(turns) if variant == "full" or t["role"] == "user"]
        messages = [
            Message(id=str(turn_index), index=i, role=turn["role"], text=turn["content"], created_at=when)
            for i, (turn_index, turn) in enumerate(kept)
        ]
        if not messages:
            continue
        answer_turns |= {(conversation_id, str(i)) for i, t in kept if t.get("has_answer")}
        session_of[conversation_id] = session_id
        conversations.append(
            Conversation(
                id=conversation_id,
                source="longmemeval",
                title=f"Chat {position + 1}",
                created_at=when,
                updated_at=when,
                messages=messages,
            )
        )
    return Haystack(conversations, session_of, frozenset(answer_turns))


def load_longmemeval(path: Path, limit: int | None = None, per_type: int | None = None) -> list[LmeQuestion]:
    """The first `limit` questions, or the first `per_type` of each question type (a balanced subset)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if per_type is not None:
        counts: dict[str, int] = {}
        kept = []
        for record in raw:
            counts[record["question_type"]] = counts.get(record["question_type"], 0) + 1
            if counts[record["question_type"]] <= per_type:
                kept.append(record)
        raw = kept
    questions: list[LmeQuestion] = []
    for record in raw[:limit] if limit else raw:
        abstention = record["question_id"].endswith("_abs")
        questions.append(
            LmeQuestion(
                question_id=record["question_id"],
                question_type=record["question_type"],
                question=record["question"],
                gold_sessions=gold_sessions(record),
                abstention=abstention,
                strict=not abstention and evidence_in_user_turns(record),
                record=record,
            )
        )
    return questions
