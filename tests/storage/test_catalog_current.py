"""The catalog (what `pastchats stats`, `recent`, `read` and `export` read when it is current) says what
the store says, or nothing: missing, stale, corrupt, of an older format, a half-done delete."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from importers.sources.privacy import delete, forget
from server.cli.common import stats_text
from storage.embedding.embedder import HashEmbedder
from storage.embedding.model_files import DEFAULT_MODEL
from storage.library import Library
from storage.stores.catalog import FILE, Catalog
from storage.upkeep.store_meta import store_model
from tests.storage.helpers import conversation
from tests.storage.test_catalog import chats


def lean_text(home: Path, model: str | None = None) -> str | None:
    """What `stats` prints from the catalog alone (None when it is not current), naming the model as the
    settings do (`Settings.model_name`)."""
    name = model or store_model(home) or DEFAULT_MODEL
    with Catalog.read(home, name) as catalog:
        if catalog is None:
            return None
    return stats_text(Library.open(home, model_name=name, load_model=False, heal=False), as_json=False)


def open_library(home: Path) -> Library:
    return Library.open(home, embedder=HashEmbedder())


def assert_same(home: Path, library: Library) -> None:
    assert lean_text(home) == stats_text(library, as_json=False)


def test_the_catalogs_stats_say_what_the_store_says_through_imports_embeddings_and_deletes(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    assert_same(home, library)  # empty
    library.import_conversations(chats())
    assert_same(home, library)
    grown = conversation("bread", ["Sourdough smells", "Feed it.", "Still sour?", "Wait."], project="baking", day=1)
    library.import_conversations([grown], embed=False)
    assert library.pending_embeddings() > 0
    assert_same(home, library)
    library.embed_pending()
    assert_same(home, library)
    assert delete(library, ["lab2"]) == ["lab2"]
    assert_same(home, library)
    assert forget(library, project="baking") == 1
    assert_same(home, library)


def test_the_catalog_answers_nothing_when_the_catalog_is_missing_stale_or_corrupt(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats())
    assert lean_text(home) is not None
    library.store.delete(["nginx"])  # written behind the writer's bookkeeping: the catalog is stale
    assert lean_text(home) is None
    assert_same(home, open_library(home))  # the next open rebuilds it

    (home / FILE).unlink()
    assert lean_text(home) is None
    for damage in (b"not a database at all", b""):
        (home / FILE).write_bytes(damage)
        assert lean_text(home) is None
    assert_same(home, open_library(home))


def test_a_catalog_of_the_older_format_is_not_read_and_is_rebuilt(tmp_path: Path) -> None:
    home = tmp_path / "store"
    open_library(home).import_conversations(chats())
    with sqlite3.connect(home / FILE) as db:
        db.execute("UPDATE state SET value = 1 WHERE key = 'format'")
    db.close()
    assert lean_text(home) is None
    assert_same(home, open_library(home))


def test_a_half_done_delete_leaves_the_answer_to_the_store(tmp_path: Path) -> None:
    home = tmp_path / "store"
    open_library(home).import_conversations(chats())
    journal = home / "journal.json"
    journal.write_text(json.dumps({"conversations": [], "deleting": ["nginx"], "deleted": []}))
    assert lean_text(home) is None
    journal.write_text(json.dumps({"conversations": [], "deleting": [], "deleted": []}))
    assert lean_text(home) is not None


def test_a_configured_model_is_named_over_the_stores(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = open_library(home)
    library.import_conversations(chats())
    assert f"Model: {library.model_name}" in str(lean_text(home))
    assert "Model: some/model" in str(lean_text(home, "some/model"))


@pytest.mark.parametrize("name", ["store", "a store with spaces", "100% ?#&=", "naïve ☃"])
def test_the_catalog_opens_under_any_path(tmp_path: Path, name: str) -> None:
    home = tmp_path / name
    library = open_library(home)
    library.import_conversations(chats()[:1])
    assert_same(home, library)
