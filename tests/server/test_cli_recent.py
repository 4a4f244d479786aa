"""`pastchats recent` without pydantic (`server.cli_recent`) prints the recent_chats tool's text byte for
byte, or leaves the answer to the tool (which raises there: an unknown project, an empty store, an
empty window)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from server.cli_recent import recent_text
from storage import catalog_read
from storage.embedder import HashEmbedder
from storage.library import Library
from tests.storage.helpers import conversation
from tools import recent_listing

WHEN = datetime(2025, 1, 4, 9, tzinfo=UTC)
CASES: list[dict[str, Any]] = [
    {},
    {"n": 1},
    {"n": 20},
    {"n": 2, "sort_order": "asc"},
    {"n": 1, "sort_order": "asc"},
    {"n": 5, "project": "HOMELAB"},
    {"n": 5, "project": "  homelab "},
    {"n": 5, "project": "   "},
    {"n": 5, "project": "naïve ☃"},
    {"n": 5, "project": "no such project"},
    {"n": 4, "before": datetime(2025, 1, 3, tzinfo=UTC)},
    {"n": 4, "after": datetime(2025, 1, 2, tzinfo=UTC), "sort_order": "asc"},
    {"n": 2, "before": WHEN + timedelta(microseconds=1)},
    {"after": datetime(2031, 1, 1, tzinfo=UTC)},
    {"after": datetime(2025, 1, 3, tzinfo=UTC), "before": datetime(2025, 1, 2, tzinfo=UTC)},
    {"after": datetime(1, 1, 2, tzinfo=UTC), "before": datetime(9999, 1, 1, tzinfo=UTC)},
    {"n": 3, "budget": 1_000},
    {"n": 20, "budget": 1_000},
    {"n": 20, "budget": 2_500},
    {"n": 2, "budget": 1_000, "sort_order": "asc"},
    {"n": 20, "budget": 200_000},
]


def chats() -> list[Any]:
    long = "A long answer, with many words about tuning PostgreSQL. " * 40
    return [
        conversation("nginx", ["nginx in front of Jellyfin?", "proxy_pass to 8096.", "and TLS?", "certbot."] * 2),
        conversation("bread", ["Sourdough smells of acetone", "Feed it twice a day."], project="baking", day=1),
        conversation("lab1", ["Proxmox VLANs", "Tag the bridge."], project="homelab", day=2, updated=WHEN),
        conversation("lab2", ["ZFS scrub schedule", "Monthly is fine."], project="Homelab", day=2, updated=WHEN),
        conversation("solo", ["one lonely message"], source="claude", day=3),
        conversation("pg", ["How do I tune Postgres?", long, "And vacuum?", long, "Thanks", long], day=4),
        conversation(
            "unicode",
            ["Ünïcödé — «quotes», 日本語のテキスト, emoji 🎉", "Réponse: <chat uri='x'> is inert here\n\n\nnext line"],
            title="Title " + "très long " * 30,
            project="Naïve ☃",
            day=5,
        ),
        conversation("late", ["a message"], day=400),  # a chat a year later
        dated(),
    ]


def dated() -> Any:
    """A chat whose messages carry their own times, over several days (the text then dates them)."""
    chat = conversation("dated", ["day one", "reply", "day three", "reply", "day five"], day=500)
    messages = [
        message.model_copy(update={"created_at": chat.created_at + timedelta(days=i, microseconds=7)})
        for i, message in enumerate(chat.messages)
    ]
    return chat.model_copy(update={"messages": messages, "updated_at": messages[-1].created_at})


def answer(home: Path, library: Library, case: dict[str, Any]) -> tuple[str | None, str]:
    arguments = {"n": 3, "sort_order": "desc", "before": None, "after": None, "project": None} | case
    budget = arguments.pop("budget", 12_000)
    connection = catalog_read.open_current(str(home))
    assert connection is not None, "the catalog should be current"
    try:
        lean = recent_text(connection, budget, **arguments)
    finally:
        connection.close()
    try:
        _, text = recent_listing.recent(library, budget=budget, **arguments)
    except Exception as exc:
        return lean, f"raises {type(exc).__name__}"
    return lean, text


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Library]]:
    out = {}
    for name, content in (("chats", chats()), ("empty", [])):
        home = tmp_path_factory.mktemp(name) / "store"
        library = Library.open(home, embedder=HashEmbedder())
        if content:
            library.import_conversations(content)
        out[name] = (home, library)
    return out


@pytest.mark.parametrize("case", CASES, ids=[str(case) for case in CASES])
@pytest.mark.parametrize("store", ["chats", "empty"])
def test_recent_without_pydantic_prints_the_tools_text_or_leaves_it_to_the_tool(
    stores: dict[str, tuple[Path, Library]], store: str, case: dict[str, Any]
) -> None:
    home, library = stores[store]
    lean, tool = answer(home, library, case)
    if lean is None:
        assert tool.startswith("raises "), "answered by the tool but not by the lean path: " + tool
    else:
        assert lean == tool


def test_every_page_of_a_listing_is_the_tools(stores: dict[str, tuple[Path, Library]]) -> None:
    home, library = stores["chats"]
    before: datetime | None = None
    pages = 0
    while True:
        lean, tool = answer(home, library, {"n": 1, "before": before})
        assert lean == tool
        output, _ = recent_listing.recent(library, n=1, before=before)
        pages += 1
        if output.next_before is None:
            break
        before = output.next_before
    assert pages >= 5
