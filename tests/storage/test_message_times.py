"""Time windows on search select messages by their own time, also in stores written before units had one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message
from storage.upkeep.store_meta import STORE_FORMAT

MAY = (datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC))
OCTOBER = (datetime(2025, 10, 1, tzinfo=UTC), datetime(2025, 11, 1, tzinfo=UTC))


def renovation() -> Conversation:
    said = [
        (datetime(2025, 5, 3, 9, tzinfo=UTC), "quartz or granite countertops for the kitchen"),
        (datetime(2025, 5, 3, 9, 5, tzinfo=UTC), "quartz needs no sealing; granite takes hot pans"),
        (datetime(2025, 10, 11, 16, tzinfo=UTC), "silicone for the gap between backsplash and countertop"),
        (None, "the installer fixes the floor bounce near the fridge"),
    ]
    messages = [
        Message(id=f"k-m{i}", index=i, role="user" if i % 2 == 0 else "assistant", text=text, created_at=when)
        for i, (when, text) in enumerate(said)
    ]
    return Conversation(
        id="kitchen",
        source="pastchats",
        title="Kitchen renovation",
        created_at=datetime(2025, 5, 3, 9, tzinfo=UTC),
        updated_at=datetime(2025, 10, 12, 8, tzinfo=UTC),
        messages=messages,
    )


def matched_ids(library: Library, query: str, window: tuple[datetime, datetime]) -> list[str]:
    result = library.search(query, max_results=3, mode="keyword", after=window[0], before=window[1])
    return [m.id for hit in result.chats for match in hit.matches for m in match.messages if m.matched]


def test_a_may_window_finds_the_may_messages_of_a_chat_updated_in_october(tmp_path: Path) -> None:
    library = Library.open(tmp_path, embedder=HashEmbedder())
    library.import_conversations([renovation()])
    assert matched_ids(library, "countertops", MAY) == ["k-m0"]
    assert matched_ids(library, "countertop", OCTOBER) == ["k-m2"]
    # a message without a time takes its chat's (updated in October)
    assert matched_ids(library, "floor bounce fridge", OCTOBER) == ["k-m3"]
    assert matched_ids(library, "floor bounce fridge", MAY) == []
    hit = library.search("countertops", max_results=1, mode="keyword").chats[0]
    assert (hit.first_message_at, hit.last_message_at) == (
        datetime(2025, 5, 3, 9, tzinfo=UTC),
        datetime(2025, 10, 11, 16, tzinfo=UTC),
    )


def test_a_store_written_before_units_had_times_is_rederived_once_on_open(tmp_path: Path) -> None:
    library = Library.open(tmp_path, embedder=HashEmbedder())
    library.import_conversations([renovation()])
    # what an older pastchats left: no unit times, store format 1
    library.store.chunks.drop_columns(["at"])
    meta = json.loads((tmp_path / "store.json").read_text())
    (tmp_path / "store.json").write_text(json.dumps({**meta, "format": 1}))
    library.close()
    reopened = Library.open(tmp_path, embedder=HashEmbedder())
    assert json.loads((tmp_path / "store.json").read_text())["format"] == STORE_FORMAT
    assert matched_ids(reopened, "countertops", MAY) == ["k-m0"]
    assert reopened.stats().chunks == reopened.keywords.doc_count()
