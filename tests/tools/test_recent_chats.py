"""recent_chats through a real MCP client: paging through history without gaps or repeats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from storage.library import Library
from tests.tools.helpers import BASE, block_uris, call, chat, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

# 100 chats in groups of four sharing an updated_at: ties are the hard case for strict before/after.
CHATS = [
    chat(f"c{i:03}", [f"question number {i}", f"answer number {i}"], updated=BASE + timedelta(hours=i // 4))
    for i in range(100)
]
NEWEST_FIRST = sorted(CHATS, key=lambda c: (c.updated_at, c.id), reverse=True)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library_with(tmp_path_factory.mktemp("store"), CHATS)


async def walk(library: Library, order: str, n: int, budget: int = 12_000) -> list[str]:
    """Page through everything the way the description teaches: the next bound is the last chat's time."""
    seen: list[str] = []
    bound: dict[str, Any] = {}
    async with Client(server_for(library, budget)) as client:
        for _ in range(200):
            result = await client.call_tool("recent_chats", {"n": n, "sort_order": order, **bound})
            data = result.structured_content
            assert not result.is_error, text_of(result)
            assert data is not None
            assert block_uris(text_of(result)) == [hit["uri"] for hit in data["chats"]]
            if not data["chats"]:
                return seen
            seen += [hit["uri"] for hit in data["chats"]]
            edge = data["chats"][-1]["updated_at"]
            bound = {"before": edge} if order == "desc" else {"after": edge}
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("n", [3, 7, 20])
async def test_paging_back_with_before_visits_every_chat_once(library: Library, n: int) -> None:
    seen = await walk(library, "desc", n)
    assert sorted(seen) == sorted(c.id for c in CHATS)
    assert len(seen) == len(set(seen))
    times = [next(c.updated_at for c in CHATS if c.id == uri) for uri in seen]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("n", [3, 20])
async def test_paging_forward_with_after_visits_every_chat_once(library: Library, n: int) -> None:
    seen = await walk(library, "asc", n)
    assert sorted(seen) == sorted(c.id for c in CHATS)
    assert len(seen) == len(set(seen))


async def test_a_tight_budget_drops_whole_ties_so_paging_still_misses_nothing(library: Library) -> None:
    first = await call(server_for(library, budget=1_500), "recent_chats", {"n": 20})
    data = first.structured_content
    assert data is not None
    assert data["truncated"] is True
    assert len(text_of(first)) <= 1_500
    assert 0 < len(data["chats"]) < 20
    assert len(data["chats"]) % 4 == 0, "ties of four are kept or dropped whole"
    seen = await walk(library, "desc", 20, budget=1_500)
    assert sorted(seen) == sorted(c.id for c in CHATS)
    assert len(seen) == len(set(seen))


async def test_the_result_ends_with_the_exact_call_for_the_next_page(library: Library) -> None:
    result = await call(server_for(library), "recent_chats", {})
    data = result.structured_content
    assert data is not None
    assert [hit["uri"] for hit in data["chats"]] == [c.id for c in NEWEST_FIRST[:4]]  # a tie of 4 is kept whole
    assert data["next_before"] == "2025-01-21T10:00:00Z"
    older = "Note: Older chats: recent_chats(n=3, before='2025-01-21T10:00:00Z')."
    assert f"\n\n{older}\n\nNote: Today is " in text_of(result)


async def test_each_chat_shows_its_title_and_opening_messages(library: Library) -> None:
    text = text_of(await call(server_for(library), "recent_chats", {"n": 1}))
    assert "Title: question number 99 · 2025-01-21 · messages 1-2 of 2" in text
    assert "#1 user: question number 99\n#2 assistant: answer number 99\n</chat>" in text


async def test_before_and_after_together_give_a_window(library: Library) -> None:
    window = {"n": 20, "after": "2025-01-20T11:00:00Z", "before": "2025-01-20T13:00:00Z"}
    result = await call(server_for(library), "recent_chats", window)
    assert sorted(block_uris(text_of(result))) == [f"c{i:03}" for i in range(8, 12)]


async def test_a_window_names_a_chat_updated_later_that_holds_messages_written_in_it(tmp_path: Path) -> None:
    from storage.models import Conversation, Message

    day = datetime(2026, 7, 8, 9, 0, tzinfo=UTC)
    messages = [
        Message(
            id=f"trip-m{i}",
            index=i,
            role="user" if i % 2 == 0 else "assistant",
            text=f"trip detail {i}",
            created_at=day + timedelta(hours=i * 2) - timedelta(days=1 if i < 4 else 0),
        )
        for i in range(14)
    ]  # messages 1-4 on the 7th, 5-8 on the 8th, 9-14 on the 9th
    trip = Conversation(
        id="trip",
        source="pastchats",
        title="Lisbon trip",
        created_at=messages[0].created_at,
        updated_at=messages[-1].created_at,
        messages=messages,
    )
    library = library_with(tmp_path, [trip, *CHATS[:3]])
    window = {"after": "2026-07-08T00:00:00Z", "before": "2026-07-09T00:00:00Z"}
    async with Client(server_for(library)) as client:
        result = await client.call_tool("recent_chats", window)
        assert result.structured_content is not None
        assert result.structured_content["chats"] == []
        note = "'Lisbon trip' (last updated 2026-07-09, so not in this list) has 4 messages written in this window"
        assert f"{note}, #5-8: read_chat(uri='trip', around=5)" in text_of(result)
        paged = await client.call_tool("recent_chats", {"n": 3})
        assert "written in this window" not in text_of(paged)


async def test_a_window_with_nothing_in_it_says_so_and_when_the_newest_chat_is(library: Library) -> None:
    result = await call(server_for(library), "recent_chats", {"before": "2024-01-01T00:00:00Z"})
    assert not result.is_error
    assert text_of(result).startswith("No chats were last updated in that time window")
    newest = NEWEST_FIRST[0].updated_at
    assert f"The newest chat was last updated {newest.date().isoformat()}." in text_of(result).splitlines()[0]
    assert result.structured_content is not None
    assert result.structured_content["newest_chat_at"] == newest.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_every_page_states_todays_date(library: Library) -> None:
    result = await call(server_for(library), "recent_chats", {"n": 2})
    today = datetime.now(UTC).date().isoformat()
    assert text_of(result).endswith(f"Note: Today is {today} (UTC).")
    assert result.structured_content is not None
    assert result.structured_content["today"] == today


async def test_an_unknown_project_is_an_error_listing_the_known_ones(library: Library) -> None:
    result = await call(server_for(library), "recent_chats", {"project": "nope"})
    assert result.is_error
    assert "project 'nope' is not a known project." in text_of(result)


async def test_n_outside_1_to_20_is_rejected_by_the_schema(library: Library) -> None:
    for n in (0, 21):
        result = await call(server_for(library), "recent_chats", {"n": n})
        assert result.is_error
        assert text_of(result) == "n must be a whole number from 1 to 20, like 3."


async def test_a_sort_order_outside_the_two_is_named_with_both(library: Library) -> None:
    result = await call(server_for(library), "recent_chats", {"sort_order": "newest"})
    assert result.is_error
    assert text_of(result) == "sort_order must be one of 'asc', 'desc'."


async def test_an_empty_store_tells_the_model_the_user_must_import_chats(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    empty = library_with(tmp_path_factory.mktemp("empty"), [])
    result = await call(server_for(empty), "recent_chats", {})
    assert result.is_error
    assert "pastchats import" in text_of(result)
