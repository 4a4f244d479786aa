"""The store records its format version: an older store is brought up to date from its conversations
once; a store from a newer pastchats is refused, untouched, with what to do."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.errors import StoreTooNew
from storage.library import Library
from storage.stores.catalog import Catalog
from storage.upkeep.store_meta import STORE_FORMAT
from tests.storage.helpers import CHATS_FOR_FORMAT as CHATS
from tests.storage.helpers import older_store, set_format, stored_format


@pytest.mark.parametrize("version", [2, 3])
def test_an_older_store_is_rebuilt_from_its_conversations_once_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, version: int
) -> None:
    home = tmp_path / "store"
    older_store(home, version)
    with caplog.at_level(logging.WARNING):
        library = Library.open(home, embedder=HashEmbedder())
    assert f"migrating the store in {home} from format {version} to {STORE_FORMAT}" in caplog.text
    assert stored_format(home) == STORE_FORMAT
    assert set(library.store._db.list_tables().tables) == {"conversations", "chunks"}  # no second copy
    assert "text" not in library.store.chunks.schema.names  # nor a third
    with Catalog.read(home) as catalog:  # rebuilt in this format, and current
        assert catalog is not None
        assert catalog.counts()[1] == library.stats().messages == 4
    assert [chat.uri for chat in library.search("sourdough acetone", mode="keyword").chats] == ["bread"]
    assert library.search("nginx in front of Jellyfin").chats[0].uri == "nginx"
    assert library.stats().conversations == 2
    library.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        Library.open(home, embedder=HashEmbedder()).close()
    assert "migrating" not in caplog.text


def test_a_format_3_store_opened_without_the_model_is_migrated_once_all_the_same(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "store"
    older_store(home, 3)
    with caplog.at_level(logging.WARNING):
        library = Library.open(home)  # no embedder: what `pastchats stats` or `recent` opens
    assert f"migrating the store in {home} from format 3 to {STORE_FORMAT}" in caplog.text
    assert stored_format(home) == STORE_FORMAT
    assert set(library.store._db.list_tables().tables) == {"conversations", "chunks"}
    assert library.stats().messages == 4
    assert [chat.uri for chat in library.search("sourdough acetone", mode="keyword").chats] == ["bread"]
    library.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        Library.open(home, embedder=HashEmbedder()).close()
    assert "migrating" not in caplog.text


def test_a_store_from_a_newer_pastchats_is_refused_untouched_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
    set_format(home, STORE_FORMAT + 1)
    before = (home / "store.json").read_bytes()
    with pytest.raises(StoreTooNew, match="newer pastchats") as refused:
        Library.open(home, embedder=HashEmbedder())
    assert "Upgrade pastchats" in str(refused.value)
    assert f"format {STORE_FORMAT + 1}" in str(refused.value)
    assert (home / "store.json").read_bytes() == before
