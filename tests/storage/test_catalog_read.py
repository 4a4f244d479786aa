"""The lean catalog reader (`storage.catalog_read`, what `pastchats stats` reads) says what the store
says, or nothing: missing, stale, corrupt, a half-done delete, a store.json it did not record."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from importers.sources.privacy import delete, forget
from server.cli_quick import stats_lines, stats_text
from storage import catalog_read
from storage.catalog import FILE
from storage.embedder import HashEmbedder
from storage.library import Library
from storage.store_meta import STORE_FORMAT
from tests.storage.helpers import conversation
from tests.storage.test_catalog import chats


def lean_text(home: Path, model: str | None = None) -> str | None:
    connection = catalog_read.open_current(str(home))
    if connection is None:
        return None
    try:
        return stats_lines(catalog_read.LeanStats(str(home), connection, model))
    finally:
        connection.close()


def open_library(home: Path) -> Library:
    return Library.open(home, embedder=HashEmbedder())


def assert_same(home: Path, library: Library) -> None:
    assert lean_text(home) == stats_text(library, as_json=False)


def test_the_lean_reader_knows_the_store_format_this_code_writes() -> None:
    assert catalog_read.STORE_FORMAT == STORE_FORMAT


def test_lean_stats_say_what_the_store_says_through_imports_embeddings_and_deletes(tmp_path: Path) -> None:
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


def test_the_lean_reader_answers_nothing_when_the_catalog_is_missing_stale_or_corrupt(tmp_path: Path) -> None:
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


def test_a_rewritten_store_json_or_a_half_done_delete_leaves_the_answer_to_the_store(tmp_path: Path) -> None:
    home = tmp_path / "store"
    open_library(home).import_conversations(chats())
    meta = json.loads((home / "store.json").read_text())
    (home / "store.json").write_text(json.dumps(meta | {"model": "another/model"}))
    assert lean_text(home) is None  # the store's model is no longer the one recorded
    (home / "store.json").write_text(json.dumps(meta | {"format": STORE_FORMAT + 1}))
    assert lean_text(home) is None  # nor its format: the full reader refuses it
    (home / "store.json").write_text(json.dumps(meta))
    assert lean_text(home) is not None  # the same bytes again

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


def test_lean_stats_import_nothing_but_the_cheapest_standard_library(tmp_path: Path) -> None:
    home = tmp_path / "store"
    open_library(home).import_conversations(chats())
    code = (
        "import sys; sys.argv = ['pastchats', '--home', sys.argv[1], 'stats']\n"
        "from server.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert exit.code == 0, exit.code\n"
        "heavy = ('pathlib', 'json', 'logging', 'typing', 're', 'dataclasses', 'pydantic', 'click', 'lancedb')\n"
        "print('LOADED', *[m for m in heavy if m in sys.modules])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "LOADED", done.stdout + done.stderr
