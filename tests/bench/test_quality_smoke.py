"""The quality harness end to end, on tiny files shaped like LoCoMo and LongMemEval_S."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.quality.cli import main, run_quality
from bench.quality.embed_cache import CachingEmbedder
from bench.quality.longmemeval import load_longmemeval
from storage.embedding.embedder import HashEmbedder


def _turn(speaker: str, dia_id: str, text: str, caption: str | None = None) -> dict[str, Any]:
    turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption:
        turn["blip_caption"] = caption
    return turn


LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Caroline", "D1:1", "Hey Mel! How have you been lately?"),
                _turn("Melanie", "D1:2", "Busy! I adopted a greyhound named Biscuit last week."),
                _turn("Caroline", "D1:3", "I started pottery classes on Thursdays."),
            ],
            "session_2_date_time": "7:11 pm on 24 May, 2023",
            "session_2": [
                _turn("Melanie", "D2:1", "We went camping by the lake this weekend."),
                _turn("Caroline", "D2:2", "My pottery teacher loved my blue vase."),
                _turn("Melanie", "D2:3", "Look what we paddled in!", caption="a red kayak on a calm lake"),
            ],
            "session_3_date_time": "3:00 pm on 1 June, 2023",
        },
        "qa": [
            {
                "question": "What is the name of Melanie's greyhound?",
                "answer": "Biscuit",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "What did Caroline make in pottery?",
                "answer": "a vase",
                "evidence": ["D1:3; D2:2"],
                "category": 1,
            },
            {"question": "Is Melanie an astronaut?", "answer": "no", "evidence": [], "category": 5},
            {"question": "What colour is the kayak?", "answer": "red", "evidence": ["D:2:3"], "category": 2},
        ],
    }
]


def _session(*turns: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [{"role": role, "content": text, "has_answer": answer} for role, text, answer in turns]


def _lme(question_id: str, qtype: str, question: str, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    filler = [
        _session(
            ("user", "Any tips for growing tomatoes on a balcony?", False), ("assistant", "Use deep pots.", False)
        ),
        _session(("user", "How do I fix a squeaky door hinge?", False), ("assistant", "Oil the hinge pin.", False)),
        _session(("user", "Recommend a sci-fi novel please.", False), ("assistant", "Try Solaris.", False)),
    ]
    ids = ["sharegpt_a_1", f"answer_{question_id}_1", "ultrachat_2", "c0ffee_3"]
    return {
        "question_id": question_id,
        "question_type": qtype,
        "question": question,
        "answer": "x",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer_session_ids": [f"answer_{question_id}_1"],
        "haystack_session_ids": ids,
        "haystack_dates": [f"2023/05/0{i + 1} (Mon) 09:3{i}" for i in range(4)],
        "haystack_sessions": [filler[0], evidence, filler[1], filler[2]],
    }


LONGMEMEVAL = [
    _lme(
        "q-user",
        "single-session-user",
        "Where did I buy my bicycle helmet?",
        _session(("user", "I bought my bicycle helmet at Decathlon.", True), ("assistant", "Nice choice!", False)),
    ),
    _lme(
        "q-asst",
        "single-session-assistant",
        "Which espresso grinder did you recommend?",
        _session(("user", "I need a coffee gadget.", False), ("assistant", "The Baratza espresso grinder.", True)),
    ),
    _lme(
        "q-none_abs",
        "single-session-user",
        "What is my cat's name?",
        _session(("user", "I have a dog called Rex.", True), ("assistant", "Cute!", False)),
    ),
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    (root / "locomo").mkdir(parents=True)
    (root / "longmemeval").mkdir()
    (root / "locomo" / "locomo_dev.json").write_text(json.dumps(LOCOMO))
    (root / "longmemeval" / "longmemeval_s_dev.json").write_text(json.dumps(LONGMEMEVAL))
    return root


@pytest.fixture
def embedder(tmp_path: Path) -> Iterator[CachingEmbedder]:
    cache = CachingEmbedder(HashEmbedder(), tmp_path / "cache.sqlite")
    yield cache
    cache.close()


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in ("latency", "import", "n", "q", "category", "questions") or isinstance(item, list):
                yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, float):
        yield value


def test_a_run_scores_every_question_with_numbers_between_zero_and_one(
    data: Path, embedder: CachingEmbedder, tmp_path: Path
) -> None:
    record = run_quality(data, embedder=embedder, workdir=tmp_path)
    locomo = record["locomo"]
    assert locomo["questions"] == 4
    assert locomo["retrieved_via"] == ["search_units"]
    assert "'D:2:3' -> ['D2:3']" in " ".join(locomo["evidence_notes"]["conv-1"])
    for mode in ("keyword", "vector", "hybrid"):
        assert locomo["modes"][mode]["overall"]["n"] == 4
        assert locomo["modes"][mode]["latency"]["median_ms"] > 0
    greyhound = locomo["modes"]["keyword"]["questions"][0]
    assert greyhound["recall@5"] == 1.0
    assert greyhound["top10"][0] == "D1:2"
    assert locomo["modes"]["keyword"]["questions"][2]["recall@5"] == 1.0  # no evidence counts 1
    for variant in ("user", "full"):
        lme = record["longmemeval"][variant]
        assert lme["import"]["stores"] == 3
        for mode in ("keyword", "vector", "hybrid"):
            summary = lme["modes"][mode]
            assert summary["strict"]["n"] == 1  # the abstention and the assistant-evidence questions are out
            assert summary["no_abs"]["n"] == 2
            assert set(summary["by_type_no_abs"]) == {"single-session-user", "single-session-assistant"}
        helmet = lme["modes"]["keyword"]["questions"][0]
        assert helmet["turn_recall@5"] == 1.0
        assert helmet["recall_all@5"] == 1.0
    assert record["longmemeval"]["user"]["modes"]["hybrid"]["turns"]["n"] == 1  # assistant evidence not indexed
    assert record["longmemeval"]["full"]["modes"]["hybrid"]["turns"]["n"] == 2
    values = list(_numbers({"locomo": locomo["modes"], "lme": record["longmemeval"]}))
    assert values
    assert all(0.0 <= v <= 1.0 for v in values)


def test_session_ids_are_opaque_in_the_store(data: Path) -> None:
    question = load_longmemeval(data / "longmemeval" / "longmemeval_s_dev.json")[0]
    haystack = question.haystack("full")
    assert all("answer" not in c.id and c.id.startswith("lme:s-") for c in haystack.conversations)
    assert "answer_q-user_1" in haystack.session_of.values()
    assert question.strict
    user_only = question.haystack("user")
    assert all(m.role == "user" for c in user_only.conversations for m in c.messages)
    assert [m.id for m in user_only.conversations[0].messages] == ["0"]


def test_the_command_line_writes_a_labelled_json_record(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    argv = ["--data", str(data), "--embedder", "hash", "--embed-cache", str(tmp_path / "c.sqlite")]
    argv += ["--workdir", str(tmp_path)]
    argv += ["--modes", "keyword,hybrid", "--only", "longmemeval", "--limit", "2", "--variant", "smoke"]
    assert main([*argv, "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["variant"] == "smoke"
    assert set(record["longmemeval"]["user"]["modes"]) == {"keyword", "hybrid"}
    assert record["longmemeval"]["full"]["questions"] == 2
    assert "locomo" not in record


SHARED = Path(__file__).resolve().parents[3] / "shared" / "bench"


@pytest.mark.skipif(not (SHARED / "longmemeval").is_dir(), reason="benchmark data not present")
def test_the_dev_split_loads_with_the_readmes_question_counts() -> None:
    from bench.quality.locomo import load_locomo

    questions = load_longmemeval(SHARED / "longmemeval" / "longmemeval_s_dev.json")
    assert len(questions) == 60
    assert sum(q.strict for q in questions) == 48  # the README's strict n
    assert sum(not q.abstention for q in questions) == 57
    samples = load_locomo(SHARED / "locomo" / "locomo_dev.json")
    assert [s.sample_id for s in samples] == ["conv-26", "conv-41", "conv-43", "conv-47", "conv-49"]
    assert all(m.id.startswith("D") for s in samples for c in s.conversations for m in c.messages)


def test_a_balanced_subset_takes_the_first_questions_of_each_type(data: Path) -> None:
    path = data / "longmemeval" / "longmemeval_s_dev.json"
    assert [q.question_id for q in load_longmemeval(path, per_type=1)] == ["q-user", "q-asst"]
    assert [q.question_id for q in load_longmemeval(path, limit=1)] == ["q-user"]


def test_missing_data_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(tmp_path), "--embedder", "hash", "--only", "locomo"]) == 2
    assert "benchmark data not found" in capsys.readouterr().err
