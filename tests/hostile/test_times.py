"""Times out of the storable range are reported per chat or clamped; they never reach the indexes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client

from importers import registry
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.tools.helpers import chat, library_with, server_for

pytestmark = pytest.mark.anyio

BAD_UPDATED_AT = [
    "1500-06-01T00:00:00Z",
    "9999-12-31T00:00:00Z",
    "0001-01-01T00:00:00+01:00",  # before year 1 in UTC: OverflowError once
    "9999-12-31T23:30:00-01:00",  # after 9999 in UTC
]


def write_plain(path: Path) -> Path:
    records = [{"id": "good", "updated_at": "2025-01-01T00:00:00Z", "messages": [{"role": "user", "text": "ok"}]}]
    for i, when in enumerate(BAD_UPDATED_AT):
        records.append({"id": f"bad{i}", "updated_at": when, "messages": [{"role": "user", "text": "lost"}]})
    records.append(
        {"id": "odd-message-time", "updated_at": "2025-02-01T00:00:00Z",
         "messages": [{"role": "user", "text": "kept", "created_at": "9999-12-31T23:59:59+00:00"}]}
    )  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def assert_answers(library: Library) -> None:
    assert library.stats().conversations >= 1
    library.search("ok")
    library.recent(n=3)
    library.delete(["good"])


def test_chats_with_times_out_of_range_are_skipped_each_with_its_reason(tmp_path: Path) -> None:
    conversations, report = registry.read(write_plain(tmp_path / "chats.jsonl"))
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())

    stats = library.import_conversations(conversations)

    assert stats.new == 2
    assert len(report.skipped) == 4
    assert all(skip.reason.startswith("updated_at out of range") for skip in report.skipped)
    assert library.get("odd-message-time").messages[0].created_at is None
    assert any("message times were out of range" in note for note in report.notes)
    assert not (tmp_path / "store" / "quarantine").exists()
    assert_answers(library)


def chatgpt_export(path: Path, update_time: float) -> Path:
    message = {"id": "m", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}}
    node = {"id": "n", "parent": None, "children": [], "message": message}
    good = {"id": "ok", "title": "ok", "create_time": 1.7e9, "update_time": 1.7e9, "current_node": "n",
            "mapping": {"n": node}}  # fmt: skip
    path.write_text(json.dumps([good, {**good, "id": "far", "update_time": update_time}]))
    return path


def test_a_chatgpt_update_time_centuries_ahead_skips_that_chat_only(tmp_path: Path) -> None:
    conversations, report = registry.read(chatgpt_export(tmp_path / "conversations.json", 20000000000))
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())

    stats = library.import_conversations(conversations)

    assert stats.new == 1
    assert [skip.reason.split(" (")[0] for skip in report.skipped] == ["updated_at out of range"]
    library.search("hi")
    library.stats()


@pytest.mark.parametrize(
    "arguments",
    [
        {"after": "0001-01-01T00:00:00+01:00"},
        {"before": "2300-01-01"},
        {"after": "0001-01-01T00:00:00Z", "before": "9999-12-31T23:59:59-01:00"},
        {"before": "0001-01-01T00:30:00+01:00"},
    ],
)
async def test_time_arguments_far_out_of_range_give_an_answer_not_an_internal_error(
    tmp_path: Path, arguments: dict[str, str]
) -> None:
    library = library_with(tmp_path / "store", [chat("nginx", ["nginx reverse proxy for jellyfin"])])
    async with Client(server_for(library)) as client:
        for tool, extra in (("conversation_search", {"query": "nginx proxy"}), ("recent_chats", {})):
            result = await client.call_tool(tool, {**extra, **arguments})
            text = " ".join(getattr(block, "text", "") for block in result.content)
            assert "Internal error" not in text, (tool, text)
    assert_answers(library)


def test_forgetting_before_a_date_far_in_the_future_forgets_everything(tmp_path: Path) -> None:
    from importers.sources.privacy import forget

    library = library_with(tmp_path / "store", [chat("a", ["alpha"]), chat("b", ["beta"])])

    assert forget(library, before=datetime(9999, 12, 31, 23, 59, tzinfo=UTC)) == 2
    assert library.stats().conversations == 0
