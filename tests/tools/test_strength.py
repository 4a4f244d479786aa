"""How far a model can trust `strength` and what a result with a strong chat gives it, on labelled
questions over the realistic corpus (tests/fixtures/corpus/strength.json, written apart from the queries
the ranking was tuned on), through a real MCP client and the real embedding model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from storage.library import Library
from tests.conftest import CORPUS
from tests.tools.helpers import server_for, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

LABELLED = json.loads((CORPUS / "strength.json").read_text(encoding="utf-8"))["questions"]
ANSWERABLE = [q for q in LABELLED if q["kind"] != "unanswerable"]
UNANSWERABLE = [q for q in LABELLED if q["kind"] == "unanswerable"]
TUNED = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))


async def results(library: Library, questions: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    async with Client(server_for(library)) as client:
        for question in questions:
            result = await client.call_tool("conversation_search", {"query": question["query"]})
            assert not result.is_error, text_of(result)
            assert result.structured_content is not None
            out.append((text_of(result), result.structured_content))
    return out


async def test_questions_the_store_cannot_answer_rarely_get_a_strong_chat(corpus_library: Library) -> None:
    found = await results(corpus_library, UNANSWERABLE)
    strong = [q["query"] for q, (_, data) in zip(UNANSWERABLE, found, strict=True) if data["matching_chats"]]
    assert len(strong) <= len(UNANSWERABLE) // 10, strong  # measured: 2 of 39


async def test_correct_first_places_are_labelled_strong(corpus_library: Library) -> None:
    questions = ANSWERABLE + TUNED
    found = await results(corpus_library, questions)
    first = [
        data["chats"][0]
        for q, (_, data) in zip(questions, found, strict=True)
        if data["chats"][0]["uri"] == q["expect_chat"]
    ]
    assert len(first) >= 0.97 * len(questions)  # measured: 103 of 104
    weak = [hit["uri"] for hit in first if hit["strength"] != "strong"]
    assert len(weak) <= 0.12 * len(first), weak  # measured: 10 of 103


async def test_a_result_with_one_strong_chat_is_short_and_shows_its_answer(corpus_library: Library) -> None:
    found = await results(corpus_library, ANSWERABLE)
    checked = 0
    unanswered = []
    for question, (text, data) in zip(ANSWERABLE, found, strict=True):
        strong = [hit for hit in data["chats"] if hit["strength"] == "strong"]
        if [hit["uri"] for hit in strong] != [question["expect_chat"]]:
            continue
        checked += 1
        assert len(text) <= 5_000, (question["query"], len(text))
        shown = {m["id"] for match in strong[0]["matches"] for m in match["messages"]}
        if question["expect_messages"][-1] not in shown:
            unanswered.append(question["query"])
        lines = [line for line in text.splitlines() if line.startswith("<chat ")]
        assert sum(line.endswith("</chat>") for line in lines) == len(data["chats"]) - 1, "weak chats in a line each"
    assert checked >= 0.6 * len(ANSWERABLE)
    # measured: 37 of 38; for "a faster dataframe library for per-hour statistics" the embedding model
    # ranks the chat's opening messages above its later answer (Polars), which is then not shown
    assert len(unanswered) <= 0.05 * checked, unanswered


async def test_the_evidence_names_the_words_a_near_miss_lacks(corpus_library: Library) -> None:
    [(text, data)] = await results(corpus_library, [{"query": "Kubernetes NetworkPolicy"}])
    assert data["matching_chats"] == 0
    crashloop = next(hit for hit in data["chats"] if hit["uri"] == "k8s-crashloop-worker")
    assert crashloop["evidence"]["matched"] == ["Kubernetes"]
    assert crashloop["evidence"]["missing"] == ["NetworkPolicy"]
    assert crashloop["evidence"]["why"] == "lacks the query's rarest words"
    assert " · weak: lacks the query's rarest words; has Kubernetes; lacks NetworkPolicy</chat>" in text
