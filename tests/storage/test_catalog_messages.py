"""A reader of the catalog alone answers `read` and `export` as the library that wrote it (`storage.reads.read_chat`,
`Catalog.iter_conversations`): every page of every chat, every export format and filter, through imports,
growth and deletes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from importers.sources.privacy import delete
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.reads.export import export
from storage.stores.catalog import Catalog
from tests.storage.helpers import chats, conversation
from tools import read_chat

READS: list[dict[str, Any]] = [
    {},
    {"limit": 1},
    {"offset": 2, "limit": 2},
    {"offset": 999},
    {"around": "2"},
    {"around": "#3", "limit": 1},
    {"around": 1},
    {"around": 99},
    {"around": "not a message"},
    {"around": "  "},
    {"budget": 1_000},
    {"budget": 1_000, "limit": 100},
]
EXPORTS: list[dict[str, Any]] = [
    {},
    {"format": "json"},
    {"project": "homelab"},
    {"project": "Naïve ☃", "format": "json"},
    {"project": "HOMELAB"},
    {"source": "claude"},
    {"source": "nowhere", "format": "json"},
]


def answers(library: Library, exported: Any, uris: list[str]) -> list[str]:
    out = []
    for uri in [*uris, "no-such-chat", " ", "&lt;escaped&gt;"]:
        for case in READS:
            try:
                output, text = read_chat.read(library, uri, **case)
            except Exception as exc:
                out.append(f"{type(exc).__name__}: {exc}")
            else:
                out.append(output.model_dump_json() + "\n" + text)
    for case in EXPORTS:
        stream = io.StringIO()
        count = export(exported, stream, **case)
        out.append(f"{count}\n{stream.getvalue()}")
    return out


def assert_same(home: Path, library: Library) -> None:
    uris = sorted(cid for cid, _ in library.store.titles())
    reader = Library.open(home, model_name=library.model_name, load_model=False, heal=False)  # the catalog alone
    with Catalog.read(home) as catalog:
        assert catalog is not None, "the catalog should reflect the store"
        assert answers(reader, catalog, uris) == answers(library, library, uris)


def test_read_and_export_from_the_catalog_are_the_stores_through_imports_and_deletes(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    assert_same(home, library)  # empty
    library.import_conversations(chats())
    assert_same(home, library)
    grown = conversation("bread", ["Sourdough smells", "Feed it.", "Still sour?", "Wait."], project="baking", day=1)
    library.import_conversations([grown, conversation("<escaped>", ["a uri that needs escaping"])], embed=False)
    assert_same(home, library)
    assert delete(library, ["lab2", "unicode"]) == ["lab2", "unicode"]
    assert_same(home, library)
    Library.open(home, embedder=HashEmbedder())  # reopened: the catalog still current
    assert_same(home, library)
