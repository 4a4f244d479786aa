"""A keyword-index commit killed after Tantivy wrote its delete file but before `meta.json`: the next
write must not trip over the orphan file (it has the very name the next commit's deletes will take)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storage.query.analysis import analyse
from storage.query.filters import Filters
from storage.stores.keyword_index import KeywordIndex


def row(chat: str, n: int, text: str) -> dict[str, Any]:
    at = datetime(2025, 3, 1, 12, n, tzinfo=UTC)
    return {
        "id": f"{chat}#{n}",
        "conversation_id": chat,
        "kind": "message",
        "text": text,
        "source": "plain",
        "updated_at": at,
        "at": at,
        "first_index": n,
        "last_index": n,
        "message_ids": [f"m{n}"],
        "project": None,
    }


def chats() -> list[dict[str, Any]]:
    chats = ("alpha", "beta")
    return [row(chat, n, f"{chat} talks about nginx upstream number {n}") for chat in chats for n in range(3)]


def delete_files(path: Path) -> set[str]:
    return {p.name for p in path.glob("*.del")}


def test_a_write_after_a_commit_killed_between_its_delete_file_and_meta_json_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "keywords"
    index = KeywordIndex(path)
    index.replace([], chats(), {})
    before = (path / "meta.json").read_text()
    index.replace(["alpha"], [], {})  # a delete in an existing segment: Tantivy writes <segment>.<opstamp>.del
    orphans = delete_files(path)
    assert orphans, "the delete should have written a delete file"
    (path / "meta.json").write_text(before)  # as if killed before meta.json was replaced: the file stays

    reopened = KeywordIndex(path)
    reopened.replace(["alpha"], [], {})  # the same delete again takes the same opstamp and file name

    hits = reopened.search(analyse("nginx upstream"), limit=10, filters=Filters())
    assert {hit.conversation_id for hit in hits} == {"beta"}
    assert reopened.doc_count() == 3
