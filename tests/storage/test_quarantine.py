"""A conversation the indexes cannot hold is set aside; it never wedges the store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message
from tests.storage.helpers import conversation
from tests.storage.test_crash_and_concurrency import assert_consistent


def unindexable(cid: str, when: datetime) -> Conversation:
    """A conversation with a time Tantivy cannot hold, built the way an older, unchecked version did."""
    message = Message(id="m0", index=0, role="user", text=f"lost sheep {cid}", created_at=None)
    return Conversation.model_construct(
        id=cid, source="pastchats", title=cid, created_at=when, updated_at=when, project=None, url=None,
        messages=[message],
    )  # fmt: skip


def quarantined(home: Path) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted((home / "quarantine").glob("*.jsonl")) for line in path.open()]


def assert_usable(library: Library, *, expect: int) -> None:
    """Search, stats and delete all answer (delete last: it must work on whatever is left)."""
    assert library.stats().conversations == expect
    library.search("sheep")
    library.recent(n=5)
    library.delete(["good"])
    assert library.stats().conversations == expect - 1
    assert not library.lock.pending()


def test_a_store_wedged_by_an_unindexable_write_sets_it_aside_and_answers_every_command(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    library.import_conversations([conversation("good", ["sheep may safely graze"])])
    # Exactly what an older version left behind: the truth row written, the journal naming it, and
    # the keyword write failing on its date every time the journal was replayed.
    bad = unindexable("bad", datetime(1500, 6, 1, tzinfo=UTC))
    library.lock.begin(["bad"])
    library.store.write_conversations([bad], {"bad": "v"})

    reopened = Library.open(home, embedder=HashEmbedder())

    assert [record["id"] for record in quarantined(home)] == ["bad"]
    record = quarantined(home)[0]
    assert record["messages"][0]["text"] == "lost sheep bad"  # type: ignore[index]
    assert "out of range" in str(record["quarantined"])
    assert_consistent(reopened)
    assert_usable(reopened, expect=1)


def test_delete_works_first_thing_on_a_wedged_store(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    library.import_conversations([conversation("good", ["sheep may safely graze"])])
    library.lock.begin(["bad"])
    library.store.write_conversations([unindexable("bad", datetime(9999, 12, 31, tzinfo=UTC))], {"bad": "v"})

    assert Library.open(home, embedder=HashEmbedder()).delete(["bad", "good"]) == 1
    reopened = Library.open(home, embedder=HashEmbedder())
    assert reopened.stats().conversations == 0
    assert_consistent(reopened)


def test_one_unindexable_conversation_in_a_batch_is_set_aside_and_the_rest_imported(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    chats = [conversation(f"c{i}", [f"sheep number {i}"]) for i in range(5)]
    chats.insert(2, unindexable("bad", datetime(2300, 1, 1, tzinfo=UTC)))
    chats.append(conversation("good", ["sheep may safely graze"]))

    stats = library.import_conversations(chats)

    assert (stats.new, stats.quarantined) == (6, ["bad"])
    assert any(line.startswith("bad: cannot be indexed") for line in stats.skipped)
    assert [record["id"] for record in quarantined(home)] == ["bad"]
    assert_consistent(library)
    assert {chat.uri for chat in library.search("sheep", max_results=10).chats} >= {"c0", "c4", "good"}
    assert_usable(library, expect=6)


def test_text_the_store_refuses_is_set_aside_and_its_file_imports_back(tmp_path: Path) -> None:
    """A lone surrogate from a caller that did not clean it (the importers do) cannot be written to
    LanceDB: setting it aside must not fail on the same character."""
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    stats = library.import_conversations(
        [conversation("c0", ["sheep one"]), conversation("odd", ["lone \ud800 sheep"]), conversation("c2", ["two"])]
    )

    assert stats.quarantined == ["odd"]
    assert library.stats().conversations == 2
    [path] = sorted((home / "quarantine").glob("*.jsonl"))
    back, report = registry.read(path, "plain")
    assert [(c.id, c.messages[0].text) for c in back] == [("odd", "lone \ufffd sheep")]
    assert report.notes
