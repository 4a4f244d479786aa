"""The rows beside the matrix: every read it serves equals LanceDB's, and it is never stale."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Literal

import pytest

from storage import chat_rows
from storage.embedder import HashEmbedder
from storage.errors import NotFound
from storage.filters import Filters
from storage.lance_store import LanceStore
from storage.library import Library
from storage.recent import page_by_time
from tests.storage.helpers import BASE, conversation
from tests.storage.test_vector_matrix import corpus

FILTERS = [
    Filters(),
    Filters(project="homelab"),
    Filters(project=("homelab", "work")),
    Filters(project="nobody"),
    Filters(source="chatgpt"),
    Filters(after=BASE + timedelta(days=10)),
    Filters(before=BASE + timedelta(days=20, hours=1)),
    Filters(project="work", source="claude", after=BASE + timedelta(days=3), before=BASE + timedelta(days=40)),
]


@pytest.fixture
def library(tmp_path: Path) -> Library:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder(32))
    chats = corpus()
    # Message times on some chats (spans, some not in message order), none on the others.
    for i in range(0, len(chats), 3):
        timed = [
            m.model_copy(update={"created_at": BASE + timedelta(days=i, minutes=(m.index * 7) % 5)})
            for m in chats[i].messages
        ]
        chats[i] = chats[i].model_copy(update={"messages": timed})
    for i in (5, 6, 7, 20):  # chats sharing an updated_at: a page never splits them
        chats[i] = chats[i].model_copy(update={"updated_at": BASE + timedelta(days=6)})
    library.import_conversations(chats)
    return library


def assert_reads_equal_lancedbs(store: LanceStore) -> None:
    ids = store.conversation_ids()
    assert store.metas([*ids, "missing"]) == store._lance_metas(ids)
    assert store.message_spans(ids) == store._lance_message_spans(ids)
    metas = store._lance_metas(ids)
    windows = {cid: [(0, 1), (meta.message_count - 2, meta.message_count + 3), (1, 2)] for cid, meta in metas.items()}
    assert store.message_windows(windows) == store._lance_message_windows(windows)
    for filters in FILTERS:
        assert sorted(store.timeline(filters)) == sorted(store._lance_timeline(filters.sql())), filters
    found = store._chat_rows()
    orders: tuple[Literal["asc", "desc"], ...] = ("asc", "desc")
    if found is not None and not found[1]:  # the rows pages on its own only when nothing changed
        for filters in FILTERS:
            for n in (1, 2, 3, 7, 100):
                for order in orders:
                    expected = page_by_time(store._lance_timeline(filters.sql()), n, order)
                    assert store.time_page(filters, n, order) == expected, (filters, n, order)
    for column in ("project", "source"):
        assert list(store.column_counts(column).items()) == sorted(store._lance_column_counts(column).items())
    for cid in ids[:10]:
        for message in store.message_windows({cid: [(0, 1000)]})[cid]:
            assert store.message_position(cid, message.id) == message.index
        assert store.message_position(cid, "no-such-message") is None


def test_every_read_the_chat_rows_serves_equals_lancedbs(library: Library) -> None:
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    assert snapshot.chats is not None
    assert_reads_equal_lancedbs(library.store)


def test_chats_read_again_and_past_the_rows_kept_decoded_still_equal_lancedbs(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat_rows, "KEPT_CHATS", 4)  # fewer than the chats: what is kept is dropped and refilled
    snapshot = library.store.matrix.snapshot()
    assert snapshot is not None
    assert snapshot.chats is not None
    ids = library.store.conversation_ids()
    in_order = list(snapshot.chats.chats(ids))
    for _ in range(2):  # the second time partly from the rows kept by the first
        assert_reads_equal_lancedbs(library.store)
        for part in (ids[:3], ids[2:5], ids[::-1], [*ids[:2], "missing", ids[0]]):
            read = snapshot.chats.chats(part)
            assert list(read) == [cid for cid in in_order if cid in part]  # the rows' order, whatever was asked
            assert {cid: row.meta for cid, row in read.items()} == library.store._lance_metas(list(read))


def test_a_chat_written_after_the_build_is_read_from_lancedb_not_from_the_chat_rows(library: Library) -> None:
    changed = conversation("c3", ["zeppelin hangar", "a new answer", "and more"], title="Renamed", project="airships")
    fresh = conversation("late", ["brand new chat"], project="airships", day=90)
    with library.lock.hold():  # writes that do not rebuild the rows, as another process's would be seen
        library.store.write_conversations([changed, fresh], {c.id: c.fingerprint() for c in (changed, fresh)})
        library._ingestor().derive([changed, fresh])
    assert library.store.matrix.changed_since(library.store.matrix.snapshot()) == ["c3", "late"]  # type: ignore[arg-type]
    assert_reads_equal_lancedbs(library.store)
    page = library.read_chat("c3")
    assert page.chat.title == "Renamed"
    assert [m.text for m in page.messages][-1] == "and more"
    assert library.resolve_project("AIRSHIPS") == ("airships",)
    assert library.recent(n=1).chats[0].uri == "late"


def test_a_deleted_chat_disappears_from_every_read_at_once(library: Library) -> None:
    library.delete(["c1"])
    assert_reads_equal_lancedbs(library.store)
    with pytest.raises(NotFound):
        library.read_chat("c1")
    assert "c1" not in {chat.uri for chat in library.recent(n=20).chats}


def test_without_a_covering_change_log_every_read_goes_to_lancedb(library: Library) -> None:
    with library.lock.hold():
        library._ingestor().derive([conversation("c2", ["rewritten"], title="Rewritten")])
    log = library.store.matrix.changes_path
    log.write_text(json.dumps({**json.loads(log.read_text()), "overflow": True}))
    assert library.store._chat_rows() is None
    assert library.read_chat("c2").messages[0].text == "rewritten"


def test_lost_chat_row_files_are_read_around_then_rebuilt_when_the_store_opens(library: Library) -> None:
    expected = library.read_chat("c5").model_dump()
    for path in library.store.matrix.directory.glob("*.messages.arrow"):
        path.unlink()
    manifest = library.store.matrix.manifest_path
    os.utime(manifest, ns=(0, 0))  # the reader notices the files changed only when the manifest does
    assert library.store._chat_rows() is None
    assert library.read_chat("c5").model_dump() == expected
    assert library.store.matrix_needs_build()
    reopened = Library.open(library.home, embedder=library.embedder)
    assert reopened.store._chat_rows() is not None
    assert reopened.read_chat("c5").model_dump() == expected


def test_a_matrix_built_before_the_chat_rows_existed_is_rebuilt_with_it(library: Library) -> None:
    manifest = library.store.matrix.manifest_path
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({key: value for key, value in data.items() if key != "chat_rows"}))
    assert library.store.matrix_needs_build()
    reopened = Library.open(library.home, embedder=library.embedder)
    assert reopened.store._chat_rows() is not None
    assert_reads_equal_lancedbs(reopened.store)
