"""LoCoMo as pastchats conversations: one chat per session, one message per turn (id = dia_id)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storage.models import Conversation, Message

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE)
# Tolerates the malformed evidence in the data: "D8:6; D9:17", "D9:1 D4:4 D4:6", "D:11:26".
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class LocomoQuestion:
    sample_id: str
    index: int
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class LocomoSample:
    sample_id: str
    conversations: list[Conversation]
    questions: list[LocomoQuestion]
    turn_ids: set[str] = field(default_factory=set)
    # Evidence strings we had to repair or could not use, for the report.
    evidence_notes: list[str] = field(default_factory=list)


def parse_date(value: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> 2023-05-08 13:56 UTC (the data has no zone; we take it as UTC)."""
    match = _DATE.search(value)
    if match is None:
        raise ValueError(f"unrecognised LoCoMo date: {value!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    parsed = datetime.strptime(f"{day} {month} {year}", "%d %B %Y")
    return parsed.replace(hour=hour_24, minute=int(minute), tzinfo=UTC)


def session_of(dia_id: str) -> str:
    """ "D3:5" -> "D3": the session a turn belongs to."""
    return dia_id.split(":", 1)[0]


def normalise_evidence(raw: list[Any]) -> tuple[tuple[str, ...], list[str]]:
    """Canonical dia_ids in order, without duplicates, and notes on every string that needed repair.

    A string may hold several ids ("D8:6; D9:17") or a stray colon ("D:11:26"); each id found counts.
    A string with no id at all is dropped and noted. Ids absent from the conversation are kept (and so
    can never be found): the label says that turn is evidence, and dropping it would flatter recall.
    """
    ids: list[str] = []
    notes: list[str] = []
    for item in raw:
        text = str(item)
        found = [f"D{a}:{b}" for a, b in _DIA_ID.findall(text)]
        if found != [text.strip()]:
            notes.append(f"{text!r} -> {found}")
        ids.extend(found)
    return tuple(dict.fromkeys(ids)), notes


def _message_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn.get('text', '')}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared a photo: {caption}]"
    return text


def sample_conversations(sample: dict[str, Any]) -> list[Conversation]:
    convo = sample["conversation"]
    speaker_a = convo["speaker_a"]
    numbers = sorted(int(m.group(1)) for key in convo if (m := _SESSION_KEY.fullmatch(key)))
    conversations: list[Conversation] = []
    for number in numbers:
        turns = convo[f"session_{number}"]
        if not turns:
            continue
        when = parse_date(convo[f"session_{number}_date_time"])
        messages = [
            Message(
                id=turn["dia_id"],
                index=i,
                role="user" if turn["speaker"] == speaker_a else "assistant",
                text=_message_text(turn),
                created_at=when,
            )
            for i, turn in enumerate(turns)
        ]
        conversations.append(
            Conversation(
                id=f"locomo:{sample['sample_id']}:session-{number}",
                source="locomo",
                title=f"Session {number}",
                created_at=when,
                updated_at=when,
                messages=messages,
            )
        )
    return conversations


def load_locomo(path: Path, limit: int | None = None) -> list[LocomoSample]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    samples: list[LocomoSample] = []
    for sample in raw[:limit] if limit else raw:
        conversations = sample_conversations(sample)
        result = LocomoSample(sample["sample_id"], conversations, [])
        result.turn_ids = {m.id for c in conversations for m in c.messages}
        for index, qa in enumerate(sample["qa"]):
            evidence, notes = normalise_evidence(qa.get("evidence") or [])
            notes += [f"{e} is not a turn of {sample['sample_id']}" for e in evidence if e not in result.turn_ids]
            result.evidence_notes += [f"q{index}: {note}" for note in notes]
            result.questions.append(
                LocomoQuestion(sample["sample_id"], index, qa["question"], int(qa["category"]), evidence)
            )
        samples.append(result)
    return samples
