"""Every follow-up call an output offers is complete and exact: followed to the end, in both directions
where there are two, it visits each message or chat once, with the filters the first call gave."""

from __future__ import annotations

import ast
import re
from datetime import timedelta
from typing import Any

import pytest
from mcp import Client

from storage.library import Library
from tests.tools.helpers import BASE, call, chat, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

CALL = re.compile(r"(Earlier messages|Later messages|Older chats|Newer chats): (\w+)\((.*?)\)\.(?:\n|$)")
# Messages of very different lengths, so that pages of the same limit hold different numbers of them.
SIZES = [3, 40, 400, 12, 900, 5, 60, 1500, 20, 8]
LONG = chat("long", [f"turn {i} " + "word " * SIZES[i % len(SIZES)] for i in range(60)], title="Long chat")
# Chats in two projects, some sharing an updated_at (a page never splits them).
TIMES = [BASE - timedelta(hours=i // 3 if i % 5 == 0 else i) for i in range(30)]
CHATS = [
    chat(f"c{i:02}", [f"question {i}", f"answer {i}"], project="homelab" if i % 3 else "work", updated=TIMES[i])
    for i in range(30)
]


# A chat of long messages only: a page shortens them rather than showing one or two whole.
WORDY = chat("wordy", [f"step {i} " + "long paragraph text " * 120 for i in range(56)], title="Wordy chat")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library_with(tmp_path_factory.mktemp("store"), [LONG, WORDY, *CHATS])


def offered(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The follow-up calls a text offers, by what they lead to: the tool and its arguments."""
    calls = {}
    for label, tool, arguments in CALL.findall(text):
        parsed = ast.parse(f"f({arguments})", mode="eval").body
        assert isinstance(parsed, ast.Call)
        calls[label] = (tool, {k.arg: ast.literal_eval(k.value) for k in parsed.keywords if k.arg})
    return calls


async def follow(client: Client, tool: str, arguments: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """The structured content of each result, from the first call to the last page in `label`'s way."""
    results = []
    while True:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None
        results.append(result.structured_content)
        following = offered(text_of(result)).get(label)
        if following is None:
            return results
        assert following[0] == tool
        arguments = following[1]
        assert len(results) < 200, "paging does not end"


@pytest.mark.parametrize(
    "first",
    [{"offset": 0}, {"around": 50}, {"offset": 40, "limit": 5}, {"offset": 31, "limit": 7}, {"around": 9, "limit": 3}],
    ids=["start", "around-50", "offset-40-limit-5", "offset-31-limit-7", "around-9-limit-3"],
)
@pytest.mark.parametrize("budget", [2_500, 12_000])
async def test_read_chat_pages_back_and_forth_visit_every_message_once(
    library: Library, first: dict[str, Any], budget: int
) -> None:
    async with Client(server_for(library, budget=budget)) as client:
        start = {"uri": "long", **first}
        back = await follow(client, "read_chat", start, "Earlier messages")
        forth = await follow(client, "read_chat", start, "Later messages")
    seen = [m["index"] for page in back[1:] + forth for m in page["messages"]]
    assert sorted(seen) == list(range(60)), "each message once, none left out"
    for page in back + forth:
        assert len(page["messages"]) >= 1
        assert len(page["messages"]) <= first.get("limit", 40)


async def test_paging_back_after_around_ends_just_before_the_page_shown(library: Library) -> None:
    result = await call(server_for(library), "read_chat", {"uri": "long", "around": 50})
    data = result.structured_content
    assert data is not None
    _, arguments = offered(text_of(result))["Earlier messages"]
    first = data["offset"]
    assert arguments["offset"] + arguments["limit"] == first


async def test_the_previous_page_keeps_the_limit(library: Library) -> None:
    text = text_of(await call(server_for(library), "read_chat", {"uri": "long", "offset": 40, "limit": 5}))
    assert offered(text)["Earlier messages"] == ("read_chat", {"uri": "long", "offset": 35, "limit": 5})
    assert offered(text)["Later messages"] == ("read_chat", {"uri": "long", "offset": 45, "limit": 5})


@pytest.mark.parametrize("first", [{"around": 50}, {"offset": 0}, {"offset": 20, "limit": 10}])
async def test_pages_of_long_messages_hold_many_messages_each_way(library: Library, first: dict[str, Any]) -> None:
    async with Client(server_for(library)) as client:
        start = {"uri": "wordy", **first}
        back = await follow(client, "read_chat", start, "Earlier messages")
        forth = await follow(client, "read_chat", start, "Later messages")
    seen = [m["index"] for page in back[1:] + forth for m in page["messages"]]
    assert sorted(seen) == list(range(56))
    asked = first.get("limit", 40)
    for page in back + forth:
        whole = page["offset"] + len(page["messages"]) in (56, start.get("offset", -1))
        assert len(page["messages"]) >= min(asked, 25) or whole or page["offset"] == 0, page["offset"]
    assert len(back) + len(forth) <= 56 // min(asked, 25) + 3


FILTERS = [
    {"n": 2, "project": "homelab"},
    {"n": 3, "sort_order": "asc", "project": "work"},
    {"n": 4, "after": "2025-01-19T12:00:00Z"},
    {"n": 1, "sort_order": "asc", "before": "2025-01-20T06:00:00Z"},
    {"n": 5, "after": "2025-01-19T12:00:00Z", "before": "2025-01-20T08:00:00Z", "project": "HomeLab"},
    {},
]


@pytest.mark.parametrize("first", FILTERS, ids=range(len(FILTERS)))
@pytest.mark.parametrize("budget", [1_200, 12_000])
async def test_recent_chats_pages_keep_their_filters_and_visit_every_chat_once(
    library: Library, first: dict[str, Any], budget: int
) -> None:
    label = "Newer chats" if first.get("sort_order") == "asc" else "Older chats"
    async with Client(server_for(library, budget=budget)) as client:
        pages = await follow(client, "recent_chats", first, label)
        everything = await client.call_tool(
            "recent_chats", {**first, "n": 20, "sort_order": first.get("sort_order", "desc")}
        )
    seen = [hit["uri"] for page in pages for hit in page["chats"]]
    assert len(seen) == len(set(seen)), "no chat twice"
    wanted = _matching(first)
    assert sorted(seen) == sorted(wanted), "every chat the filters select, and no other"
    times = [hit["updated_at"] for page in pages for hit in page["chats"]]
    assert times == sorted(times, reverse=first.get("sort_order") != "asc"), "pages follow each other in order"
    assert everything.structured_content is not None


def _matching(filters: dict[str, Any]) -> list[str]:
    from datetime import datetime

    after = datetime.fromisoformat(filters["after"]) if "after" in filters else None
    before = datetime.fromisoformat(filters["before"]) if "before" in filters else None
    project = filters.get("project")
    return [
        c.id
        for c in [LONG, WORDY, *CHATS]
        if (project is None or (c.project or "").casefold() == project.casefold())
        and (after is None or c.updated_at > after)
        and (before is None or c.updated_at < before)
    ]


async def test_the_next_page_call_repeats_every_argument_given(library: Library) -> None:
    first = {"n": 2, "project": "homelab", "after": "2025-01-19T12:00:00Z"}
    text = text_of(await call(server_for(library), "recent_chats", first))
    tool, arguments = offered(text)["Older chats"]
    assert tool == "recent_chats"
    assert {key: arguments[key] for key in ("n", "project", "after")} == first
    assert set(arguments) == {"n", "project", "after", "before"}


READ_CALL = re.compile(r"read_chat\((uri=(?:'[^']*'|\"[^\"]*\")(?:, \w+=\d+)*)\)")
SEARCHES = ["sourdough starter", "payment-service", "Kubernetes NetworkPolicy", "wedding speech for my brother"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("budget", [2_500, 12_000])
async def test_every_call_a_search_offers_reads_its_chat_once_both_ways(corpus_library: Library, budget: int) -> None:
    """Each read_chat call in a search's notes (more matches, shortened messages, strong chats without
    room, chats left out) opens a page whose Earlier and Later calls, followed to the end, show each
    message of the chat exactly once."""
    walked = 0
    async with Client(server_for(corpus_library, budget=budget)) as client:
        for query in SEARCHES:
            result = await client.call_tool("conversation_search", {"query": query, "max_results": 10})
            assert not result.is_error, text_of(result)
            for arguments in READ_CALL.findall(text_of(result)):
                parsed = ast.parse(f"f({arguments})", mode="eval").body
                assert isinstance(parsed, ast.Call)
                start = {k.arg: ast.literal_eval(k.value) for k in parsed.keywords if k.arg}
                back = await follow(client, "read_chat", start, "Earlier messages")
                forth = await follow(client, "read_chat", start, "Later messages")
                seen = [m["index"] for page in back[1:] + forth for m in page["messages"]]
                assert sorted(seen) == list(range(forth[0]["chat"]["message_count"])), start
                walked += 1
    assert walked >= len(SEARCHES)
