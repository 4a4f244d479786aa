"""Each store-format migration step on its own, and the runner that records them: a step runs once,
a step that needs the model waits for it, and the store reaches today's format only when none is due."""

from __future__ import annotations

import json
from pathlib import Path

from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.stores.lance_store import LanceStore
from storage.units.windows import WINDOW, kind_of
from storage.upkeep import migrations
from storage.upkeep.migrations import MIGRATIONS, Migration, due, migrate
from storage.upkeep.store_meta import STORE_FORMAT, read_meta
from storage.writing.ingest import Ingestor
from tests.storage.helpers import older_store


def unit_kinds(store: LanceStore) -> set[str]:
    ids = store.chunks.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
    return {kind_of(chunk_id) for chunk_id in ids}


def test_the_steps_due_follow_the_stored_format_and_what_was_recorded() -> None:
    names = [step.name for step in MIGRATIONS]
    assert [step.name for step in due({"format": 2})] == names
    assert [step.name for step in due({"format": 3})] == ["drop_copies_the_catalog_replaced"]
    assert due({"format": 4}) == []
    assert due({"format": STORE_FORMAT}) == []
    assert due({}) == []  # a new store: nothing to migrate
    assert [step.name for step in due({"format": 2, "migrations": [names[0]]})] == names[1:]


def test_dropping_the_copies_alone_leaves_the_conversations_and_passages(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home, 3)
    store = LanceStore(home / "lancedb", HashEmbedder().dim)
    assert "messages" in store._db.list_tables().tables
    passages = store.chunk_count()
    migrations.drop_copies_the_catalog_replaced(store, None)
    assert set(store._db.list_tables().tables) == {"conversations", "chunks"}
    assert "text" not in store.chunks.schema.names
    assert store.conversation_count() == 2
    assert store.chunk_count() == passages
    migrations.drop_copies_the_catalog_replaced(store, None)  # nothing left to drop: a no-op
    assert store.chunk_count() == passages


def test_deriving_the_units_again_alone_brings_back_messages_and_windows(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home, 2)  # its units emptied: only the conversations can give them back
    library = Library.open(home, embedder=HashEmbedder(), heal=False)
    assert library.store.chunk_count() == 0
    with library.writing(timeout=0):
        migrations.derive_units_again(library.store, library.ingestor())
    assert unit_kinds(library.store) == {"message", WINDOW}
    assert library.store.pending_count() == 0  # embedded with the model at hand


def test_without_the_model_only_the_steps_that_need_none_run_and_are_recorded(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home, 2)
    store = LanceStore(home / "lancedb", HashEmbedder().dim)
    assert migrate(home, store, None) is False
    meta = read_meta(home)
    assert meta["format"] == 2
    assert meta["migrations"] == ["drop_copies_the_catalog_replaced"]
    assert [step.name for step in due(meta)] == ["derive_units_again"]


def test_with_the_model_the_store_reaches_todays_format_and_drops_the_record(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home, 2)
    library = Library.open(home, embedder=HashEmbedder(), heal=False)
    with library.writing(timeout=0):
        assert migrate(home, library.store, None) is False
        assert migrate(home, library.store, library.ingestor()) is True
    meta = json.loads((home / "store.json").read_text(encoding="utf-8"))
    assert meta["format"] == STORE_FORMAT
    assert "migrations" not in meta
    assert unit_kinds(library.store) == {"message", WINDOW}


def test_a_recorded_step_never_runs_again(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home, 3)
    runs: list[str] = []

    def counted(store: LanceStore, ingestor: Ingestor | None) -> None:
        runs.append("ran")

    steps = (
        Migration("counted", before=STORE_FORMAT, needs_model=False, run=counted),
        Migration("waits_for_the_model", before=STORE_FORMAT, needs_model=True, run=counted),
    )
    store = LanceStore(home / "lancedb", HashEmbedder().dim)
    assert migrate(home, store, None, steps) is False
    assert migrate(home, store, None, steps) is False
    assert runs == ["ran"]  # the first step once; the second still waits
    assert read_meta(home)["migrations"] == ["counted"]
