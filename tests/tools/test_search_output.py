"""What a model sees from conversation_search on the realistic corpus, through a real MCP client and the
real embedding model: every requested chat, a strength it can trust, windows that answer, numbers it
can pass to read_chat, and time windows that see inside a chat."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from storage.library import Library
from tests.conftest import CORPUS
from tests.tools.helpers import block_uris, call, server_for, text_of

# The shared corpus store (tests/conftest.py: ~400 texts, windows included, through the real model) is
# built inside whichever test asks for it first: on a busy shared machine that alone takes minutes.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

QUERIES = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))
KNOWN_TOPICS = [q for q in QUERIES if q["kind"] in ("keyword", "identifier")]
NONSENSE = [
    "purple elephant quantum banana",
    "asdf qwerty zxcv",
    "quantum chromodynamics lattice",
    "what did we discuss yesterday",
    "do you remember our conversation",
    "the thing we talked about last time",
    "what did you tell me before",
]
BROAD = ["server setup", "plan", "how do I fix this error"]


async def search(library: Library, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await call(server_for(library), "conversation_search", arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return text_of(result), result.structured_content


@pytest.mark.parametrize("max_results", [5, 10])
@pytest.mark.parametrize("query", BROAD)
async def test_every_requested_chat_is_shown_within_the_budget(
    corpus_library: Library, query: str, max_results: int
) -> None:
    text, data = await search(corpus_library, query=query, max_results=max_results)
    assert len(block_uris(text)) == max_results
    assert [hit["uri"] for hit in data["chats"]] == block_uris(text)
    assert len(text) <= 12_000
    for hit in data["chats"]:
        assert hit["matches"], f"{hit['uri']} is shown without a match"


async def test_a_search_with_more_matches_than_shown_names_each_with_the_call_that_reads_it(
    corpus_library: Library,
) -> None:
    text, data = await search(corpus_library, query="postgres", max_results=1)
    assert data["matching_chats"] == 1 + len(data["others"]) >= 2
    others = "; ".join(f"'{o['title']}': read_chat(uri='{o['uri']}', around={o['number']})" for o in data["others"])
    assert f"Shown 1 of {data['matching_chats']} matching chats; the others: {others}." in text
    assert "max_results=10" not in text, "a call with more results would show the first chat again"


async def test_matching_chats_counts_only_chats_with_real_evidence(corpus_library: Library) -> None:
    _, data = await search(corpus_library, query="server setup", max_results=5)
    strong = [hit for hit in data["chats"] if hit["strength"] == "strong"]
    assert data["matching_chats"] == len(strong) + len(data["others"])
    assert data["matching_chats"] < 5, "not every chat that shares a word"


@pytest.mark.parametrize("query", NONSENSE)
async def test_nonsense_and_meta_word_queries_get_no_strong_chat(corpus_library: Library, query: str) -> None:
    text, data = await search(corpus_library, query=query)
    assert [hit["strength"] for hit in data["chats"]] == ["weak"] * len(data["chats"])
    assert text.startswith(f"No strong match for {query!r}")
    assert "ask the user" in text.splitlines()[0]
    lines = [line for line in text.splitlines() if line.startswith("<chat ")]
    assert len(lines) == len(data["chats"])
    assert all(line.endswith("</chat>") and " · weak: " in line for line in lines), "a line each, saying why weak"
    assert len(text) <= 2_500


@pytest.mark.parametrize("query", KNOWN_TOPICS, ids=[q["query"] for q in KNOWN_TOPICS])
async def test_a_known_topic_query_puts_its_chat_first_and_strong(
    corpus_library: Library, query: dict[str, Any]
) -> None:
    text, data = await search(corpus_library, query=query["query"])
    top = data["chats"][0]
    assert (top["uri"], top["strength"]) == (query["expect_chat"], "strong")
    assert text.startswith(f"<chat uri='{query['expect_chat']}'")
    strengths = [hit["strength"] for hit in data["chats"]]
    assert strengths == sorted(strengths, key=lambda s: s != "strong"), "weak chats come after strong ones"


async def test_matched_messages_are_shown_with_their_question_or_answer(corpus_library: Library) -> None:
    unanswered = []
    for query in KNOWN_TOPICS:
        _, data = await search(corpus_library, query=query["query"])
        for hit in data["chats"]:
            for match in hit["matches"]:
                shown = {m["index"]: m for m in match["messages"]}
                for message in match["messages"]:
                    if not message["matched"]:
                        continue
                    after, before = shown.get(message["index"] + 1), shown.get(message["index"] - 1)
                    last = message["index"] == hit["message_count"] - 1
                    if message["role"] == "user" and not last and (after is None or after["role"] != "assistant"):
                        unanswered.append(f"{query['query']!r}: {message['id']} without its answer")
                    if message["role"] == "assistant" and message["index"] > 0 and before is None:
                        unanswered.append(f"{query['query']!r}: {message['id']} without its question")
    assert not unanswered, "\n".join(unanswered)


async def test_every_message_line_shows_the_number_read_chat_accepts(corpus_library: Library) -> None:
    text, data = await search(corpus_library, query="nginx reverse proxy", max_results=1)
    hit = data["chats"][0]
    numbers = [int(n) for n in re.findall(r"^#(\d+) (?:user|assistant)", text, flags=re.MULTILINE)]
    assert numbers == [m["number"] for match in hit["matches"] for m in match["messages"]]
    matched = next(m["number"] for match in hit["matches"] for m in match["messages"] if m["matched"])
    assert re.search(rf"^#{matched} \w+ \([^)]*matched\): ", text, flags=re.MULTILINE)
    async with Client(server_for(corpus_library)) as client:
        page = await client.call_tool("read_chat", {"uri": hit["uri"], "around": matched, "limit": 5})
    assert not page.is_error, text_of(page)
    assert page.structured_content is not None
    assert [m["number"] for m in page.structured_content["messages"] if m["matched"]] == [matched]
    assert re.search(rf"^#{matched} \w+ \([^)]*matched\): ", text_of(page), flags=re.MULTILINE)


async def test_a_may_window_finds_the_may_messages_of_a_chat_updated_later(corpus_library: Library) -> None:
    may = {"after": "2025-05-01T00:00:00Z", "before": "2025-06-01T00:00:00Z"}
    text, data = await search(corpus_library, query="countertop slab thickness undermount sink", **may)
    kitchen = next(hit for hit in data["chats"] if hit["uri"] == "kitchen-renovation")
    assert kitchen["updated_at"].startswith("2025-10-12"), "the chat was last updated in October"
    matched = [m for match in kitchen["matches"] for m in match["messages"] if m["matched"]]
    assert matched
    assert all(m["created_at"].startswith("2025-05") for m in matched)
    title = "Title: Kitchen renovation: countertops, cabinets, floor · project personal"
    assert f"{title} · 2025-05-03 to 2025-10-11 · messages" in text
    assert "#3 user (2025-05-17, matched): We went with quartz" in text


async def test_a_time_window_selects_messages_not_whole_chats(corpus_library: Library) -> None:
    october = {"after": "2025-10-01T00:00:00Z", "before": "2025-11-01T00:00:00Z"}
    _, data = await search(corpus_library, query="quartz countertop", **october)
    for hit in data["chats"]:
        for match in hit["matches"]:
            for message in match["messages"]:
                if message["matched"]:
                    assert message["created_at"] >= "2025-10-01", f"{message['id']} is outside the window"


async def test_recent_chats_keeps_claudes_contract_on_updated_at(corpus_library: Library) -> None:
    result = await call(server_for(corpus_library), "recent_chats", {"before": "2025-06-01T00:00:00Z", "n": 20})
    assert "kitchen-renovation" not in block_uris(text_of(result)), "updated in October, so not before June"
    result = await call(server_for(corpus_library), "recent_chats", {"n": 2})
    assert block_uris(text_of(result))[0] == "kitchen-renovation"
    assert "2025-05-03 to 2025-10-11 · messages 1-2, 7-8 of 8" in text_of(result)
