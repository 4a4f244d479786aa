"""The catalog, the store's read model, is kept current by every write: the CLI's reader of a current
catalog answers `stats` and `recent` as the library does, and a missing, stale or corrupt one is not
used (the next open rebuilds it)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest

from importers.sources.privacy import delete, forget
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.reads.listing import store_stats
from storage.stores.catalog import FILE, Catalog
from tests.storage.helpers import conversation
from tests.storage.test_crash_and_concurrency import start_writer, write_source
from tools import recent_chats

ORDERS: tuple[Literal["asc", "desc"], ...] = ("asc", "desc")
CASES: list[dict[str, Any]] = [
    {},
    {"n": 1},
    {"n": 20},
    {"n": 2, "sort_order": "asc"},
    {"n": 5, "project": "HOMELAB"},
    {"n": 5, "project": "no such project"},
    {"n": 4, "before": datetime(2025, 1, 3, tzinfo=UTC)},
    {"n": 4, "after": datetime(2025, 1, 2, tzinfo=UTC), "sort_order": "asc"},
    {"after": datetime(2031, 1, 1, tzinfo=UTC)},
    {"n": 3, "budget": 900},
]


def chats() -> list[Any]:
    shared = datetime(2025, 1, 4, 9, tzinfo=UTC)  # ties: a page must not split them
    return [
        conversation("nginx", ["nginx in front of Jellyfin?", "proxy_pass to 8096.", "and TLS?", "certbot."] * 2),
        conversation("bread", ["Sourdough smells of acetone", "Feed it twice a day."], project="baking", day=1),
        conversation("lab1", ["Proxmox VLANs", "Tag the bridge."], project="homelab", day=2, updated=shared),
        conversation("lab2", ["ZFS scrub schedule", "Monthly is fine."], project="Homelab", day=2, updated=shared),
        conversation("solo", ["one lonely message"], source="claude", day=3),
    ]


def answers(source: Any) -> list[str]:
    out = []
    for case in CASES:
        try:
            output, text = recent_chats.recent(source, **case)
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {exc}")
        else:
            out.append(output.model_dump_json() + "\n" + text)
    return out


def stats_json(source: Any) -> str:
    return json.dumps(dataclasses.asdict(source.stats()), default=str)  # order-sensitive: ties keep scan order


def assert_same(home: Path, library: Library) -> None:
    """A reader that only reads the catalog (as `pastchats stats` and `recent` open the store when
    nothing needs repair) answers as the library that wrote it."""
    with Catalog.read(home, library.model_name) as catalog:
        assert catalog is not None, "the catalog should reflect the store"
    reader = Library.open(home, model_name=library.model_name, load_model=False, heal=False)
    assert stats_json(reader) == stats_json(library)
    assert answers(reader) == answers(library)


def open_library(home: Path) -> Library:
    return Library.open(home, embedder=HashEmbedder())


def test_the_catalog_answers_stats_and_recent_as_lancedb_does_through_imports_and_deletes(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    assert_same(home, library)  # the empty store
    library.import_conversations(chats())
    assert_same(home, library)
    grown = conversation(
        "bread",
        ["Sourdough smells of acetone", "Feed it twice a day.", "Still sour?", "Wait."],
        project="baking",
        day=1,
    )
    library.import_conversations([grown], embed=False)  # and passages awaiting embeddings
    assert library.pending_embeddings() > 0
    assert_same(home, library)
    library.embed_pending()
    assert_same(home, library)
    assert delete(library, ["lab2"]) == ["lab2"]
    assert_same(home, library)
    assert forget(library, project="baking") == 1
    assert_same(home, library)
    library.delete([cid for cid, _ in library.store.titles()])
    assert_same(home, library)  # empty again: the tools' empty-store error, from both


def test_a_missing_stale_or_corrupt_catalog_is_not_used_and_the_next_open_rebuilds_it(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats())
    library.store.delete(["nginx"])  # a write that bypassed the writer's bookkeeping: the catalog is stale
    with Catalog.read(home) as catalog:
        assert catalog is None
    assert_same(home, open_library(home))

    (home / FILE).unlink()
    with Catalog.read(home) as catalog:
        assert catalog is None
    assert_same(home, open_library(home))

    for damage in (b"not a database at all", b""):
        (home / FILE).write_bytes(damage)
        with Catalog.read(home) as catalog:
            assert catalog is None
        assert_same(home, open_library(home))


def test_a_killed_writer_leaves_a_catalog_that_is_either_current_or_unused(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats())
    source = write_source(tmp_path / "more.jsonl", range(1500))
    writer = start_writer(home, source)
    journal = home / "journal.json"
    deadline = time.monotonic() + 120
    while not journal.exists() and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert writer.poll() is None, "the writer finished before it could be killed; make the source larger"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()

    with Catalog.read(home, library.model_name) as catalog:
        if catalog is not None:  # killed before its first commit: the catalog still tells the truth
            assert json.dumps(dataclasses.asdict(store_stats(catalog, home, library.model_name)), default=str) == (
                stats_json(library)
            )
    reader = Library.open(home, load_model=False)  # reads as it is, without the model: nothing repaired
    assert reader.lock.pending(), "the killed write is still in the journal"
    assert_same(home, reader)
    repaired = open_library(home)
    assert not repaired.lock.pending()
    assert_same(home, repaired)


@pytest.mark.parametrize("newer", [True, False])
def test_a_store_from_a_newer_pastchats_is_refused_by_the_catalog_too(tmp_path: Path, newer: bool) -> None:
    from storage.errors import StoreTooNew
    from storage.upkeep.store_meta import STORE_FORMAT

    home = tmp_path / "store"
    open_library(home).import_conversations(chats())
    meta = json.loads((home / "store.json").read_text())
    (home / "store.json").write_text(json.dumps(meta | {"format": STORE_FORMAT + (1 if newer else 0)}))
    if newer:
        with pytest.raises(StoreTooNew), Catalog.read(home):
            pass
    else:
        with Catalog.read(home) as catalog:
            assert catalog is not None


def test_a_rebuilt_catalog_holds_exactly_what_the_writer_kept_up_to_date(tmp_path: Path) -> None:
    import sqlite3

    def dump(home: Path) -> list[tuple[Any, ...]]:
        with sqlite3.connect(home / FILE) as db:
            return (
                db.execute("SELECT * FROM chats ORDER BY id").fetchall()
                + db.execute("SELECT * FROM state ORDER BY key").fetchall()
            )

    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats()[:2])
    library.import_conversations(chats()[2:])  # the catalog kept up to date chat by chat
    kept = dump(home)
    (home / FILE).unlink()
    open_library(home)  # rebuilt in one pass over the messages
    assert dump(home) == kept


def test_listing_chats_by_time_reads_an_index_not_the_rows_that_hold_every_chats_messages(tmp_path: Path) -> None:
    import sqlite3

    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats()[:2])
    library.import_conversations(chats()[2:])
    with sqlite3.connect(home / FILE) as db:
        for where in ("", " WHERE project IN ('homelab', 'Homelab')", " WHERE updated > 0 AND updated < 9e18"):
            rows = db.execute(f"EXPLAIN QUERY PLAN SELECT updated, id FROM chats{where}")
            plan = " ".join(str(row[-1]) for row in rows)
            assert "COVERING INDEX chats_timeline" in plan, plan
    assert_same(home, library)


def test_a_page_by_time_read_from_the_index_is_the_page_the_whole_timeline_gives(tmp_path: Path) -> None:
    from storage.query.filters import Filters
    from storage.reads.listing import page_by_time

    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats())
    filters = [
        Filters(),
        Filters(project=("homelab", "Homelab")),
        Filters(after=datetime(2025, 1, 2, tzinfo=UTC)),
        Filters(before=datetime(2025, 1, 4, 9, tzinfo=UTC)),
        Filters(source="claude"),
        Filters(after=datetime(2031, 1, 1, tzinfo=UTC)),
    ]
    with Catalog.read(home) as catalog:
        assert catalog is not None
        for where in filters:
            for n in range(1, 7):
                for order in ORDERS:
                    whole = page_by_time(catalog.timeline(where), n, order)
                    assert catalog.time_page(where, n, order) == whole, (where, n, order)


def test_a_reader_shows_an_imports_chats_batch_by_batch_before_the_import_ends(tmp_path: Path) -> None:
    from storage.writing.ingest import BATCH_CONVERSATIONS

    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations([conversation("old", ["already here"])])
    reader = Library.open(home, embedder=HashEmbedder(), heal=False)  # as a running server reads
    seen_mid_import: list[int] = []

    def source() -> Any:
        for i in range(2 * BATCH_CONVERSATIONS):
            if i == BATCH_CONVERSATIONS:  # the first batch is written; the import goes on
                seen_mid_import.append(reader.stats().conversations)
            yield conversation(f"c{i}", [f"question {i} about topic{i % 7}", "an answer"], day=i % 30)

    Library.open(home, embedder=HashEmbedder()).import_conversations(source())
    assert seen_mid_import == [1 + BATCH_CONVERSATIONS]
    assert reader.stats().conversations == 1 + 2 * BATCH_CONVERSATIONS
    assert reader.search("question 300 topic6", mode="keyword").chats[0].uri == "c300"
