"""LongMemEval_S: one fresh store per question and variant; session-level and turn-level recall, per mode."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.quality.longmemeval import LmeQuestion, Variant
from bench.quality.metrics import latency_summary, mean, ndcg_any, rank_sessions, recall_all, recall_any, turn_recall
from bench.quality.retrieve import BenchMode, ImportTiming, LibraryFactory, Turn, check_modes, fresh_store, retrieve

SESSION_KS = (5, 10)
TURN_KS = (5, 10, 50)
SESSION_METRICS = [f"{name}@{k}" for name in ("recall_any", "recall_all", "ndcg_any") for k in SESSION_KS]
TURN_METRICS = [f"turn_recall@{k}" for k in TURN_KS]


def _sessions(turns: Sequence[Turn], session_of: Mapping[str, str]) -> list[str]:
    """Original session ids in rank order; the opaque ids never leave the scorer."""
    return rank_sessions(turns, lambda turn: session_of[turn[0]])


def score_question(sessions: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for k in SESSION_KS:
        scores[f"recall_any@{k}"] = recall_any(sessions, gold, k)
        scores[f"recall_all@{k}"] = recall_all(sessions, gold, k)
        scores[f"ndcg_any@{k}"] = ndcg_any(sessions, gold, k)
    return scores


def summarise(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    return {"n": len(rows), **{key: mean(row[key] for row in rows) for key in keys}}


def _summarise_mode(rows: list[dict[str, Any]], seconds: list[float]) -> dict[str, Any]:
    scored = [row for row in rows if not row["abstention"]]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in scored:
        by_type[row["type"]].append(row)
    with_turns = [row for row in scored if row.get("turn_recall@5") is not None]
    return {
        "strict": summarise([row for row in scored if row["strict"]], SESSION_METRICS),
        "no_abs": summarise(scored, SESSION_METRICS),
        "by_type_no_abs": {t: summarise(by_type[t], SESSION_METRICS) for t in sorted(by_type)},
        "turns": summarise(with_turns, TURN_METRICS),
        "latency": latency_summary(seconds),
        "questions": rows,
    }


def run_variant(
    questions: list[LmeQuestion],
    variant: Variant,
    modes: list[BenchMode],
    open_library: LibraryFactory,
    workdir: Path | None = None,
) -> dict[str, Any]:
    timing = ImportTiming()
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latency: dict[str, list[float]] = defaultdict(list)
    via: set[str] = set()
    short = 0
    for question in questions:
        haystack = question.haystack(variant)
        with fresh_store(open_library, haystack.conversations, timing, workdir) as lib:
            if question is questions[0]:
                check_modes(lib, modes)
            for mode in modes:
                got = retrieve(lib, question.question, mode)
                via.add(got.via)
                latency[mode].append(got.seconds)
                sessions = _sessions(got.turns, haystack.session_of)
                short += len(sessions) < max(SESSION_KS)
                row: dict[str, Any] = {
                    "question_id": question.question_id,
                    "type": question.question_type,
                    "abstention": question.abstention,
                    "strict": question.strict,
                    "gold": list(question.gold_sessions),
                    **score_question(sessions, question.gold_sessions),
                    "top10_gold": [s in question.gold_sessions for s in sessions[:10]],
                }
                if haystack.answer_turns:
                    for k in TURN_KS:
                        row[f"turn_recall@{k}"] = turn_recall(got.turns, haystack.answer_turns, k)
                rows[mode].append(row)
    return {
        "questions": len(questions),
        "retrieved_via": sorted(via),
        "rankings_shorter_than_10_sessions": short,
        "import": timing.as_dict(),
        "modes": {mode: _summarise_mode(rows[mode], latency[mode]) for mode in modes},
    }
