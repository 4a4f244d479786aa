"""LoCoMo: one store per conversation; turn recall@k (k in turns) and session recall@5, per mode."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.quality.locomo import CATEGORIES, LocomoSample, session_of
from bench.quality.metrics import latency_summary, mean, rank_sessions, session_recall, turn_recall
from bench.quality.retrieve import BenchMode, ImportTiming, LibraryFactory, check_modes, fresh_store, retrieve

KS = (5, 10, 25, 50)
SESSION_K = 5


def score_question(turn_ids: list[str], evidence: tuple[str, ...]) -> dict[str, float]:
    scores = {f"recall@{k}": turn_recall(turn_ids, evidence, k) for k in KS}
    sessions = rank_sessions(turn_ids, session_of)
    gold = {session_of(e) for e in evidence}
    scores[f"session_recall@{SESSION_K}"] = session_recall(sessions, gold, SESSION_K)
    return scores


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [f"recall@{k}" for k in KS] + [f"session_recall@{SESSION_K}"]
    return {"n": len(rows), **{key: mean(row[key] for row in rows) for key in keys}}


def run_locomo(
    samples: list[LocomoSample], modes: list[BenchMode], open_library: LibraryFactory, workdir: Path | None = None
) -> dict[str, Any]:
    timing = ImportTiming()
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latency: dict[str, list[float]] = defaultdict(list)
    via: set[str] = set()
    for sample in samples:
        with fresh_store(open_library, sample.conversations, timing, workdir) as lib:
            if sample is samples[0]:
                check_modes(lib, modes)
            for question in sample.questions:
                # Modes interleaved per question, so drift in machine load hits them alike.
                for mode in modes:
                    got = retrieve(lib, question.question, mode)
                    via.add(got.via)
                    latency[mode].append(got.seconds)
                    turn_ids = [message_id for _, message_id in got.turns]
                    row: dict[str, Any] = {
                        "sample": question.sample_id,
                        "q": question.index,
                        "category": question.category,
                        "evidence": list(question.evidence),
                        **score_question(turn_ids, question.evidence),
                        "top10": turn_ids[:10],
                    }
                    rows[mode].append(row)
    results: dict[str, Any] = {}
    for mode in modes:
        by_category = defaultdict(list)
        for row in rows[mode]:
            by_category[row["category"]].append(row)
        results[mode] = {
            "overall": summarise(rows[mode]),
            "by_category": {f"{c} {CATEGORIES.get(c, '?')}": summarise(by_category[c]) for c in sorted(by_category)},
            "latency": latency_summary(latency[mode]),
            "questions": rows[mode],
        }
    return {
        "conversations": [s.sample_id for s in samples],
        "questions": sum(len(s.questions) for s in samples),
        "retrieved_via": sorted(via),
        "evidence_notes": {s.sample_id: s.evidence_notes for s in samples if s.evidence_notes},
        "import": timing.as_dict(),
        "modes": results,
    }
