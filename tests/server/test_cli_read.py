"""`pastchats read` and `export` without pydantic (`server.cli_read`) print the read_chat tool's text and
JSON, and the export's bytes, exactly as the store and the catalog give them, or leave the answer to
the tool where it raises (an unknown chat or message, an empty uri)."""

from __future__ import annotations

import html
import io
import random
from pathlib import Path
from typing import Any, cast

import pytest

from importers.sources.privacy import delete
from server import cli_read
from storage import catalog_read
from storage.catalog import Catalog
from storage.embedder import HashEmbedder
from storage.export import export
from storage.library import Library
from tests.server.test_cli_recent import chats
from tests.storage.helpers import conversation
from tools import read_page
from tools.render import attr

READS: list[dict[str, Any]] = [
    {},
    {"limit": 1},
    {"limit": 2, "offset": 1},
    {"offset": 2, "limit": 3},
    {"offset": 5},
    {"offset": 999},
    {"limit": 100},
    {"around": "1"},
    {"around": "2"},
    {"around": "#3", "limit": 1},
    {"around": " 4 ", "limit": 2},
    {"around": "6", "limit": 3},
    {"around": "99"},
    {"around": "0"},
    {"around": "not a message"},
    {"around": "  "},
    {"around": ""},
    {"around": "#"},
    {"around": "pg-m3", "limit": 2},
    {"around": "unicode-m1"},
    {"around": "nginx-m7", "limit": 4},
    {"around": "dated-m2", "limit": 3, "offset": 40},
    {"budget": 1_000},
    {"budget": 1_000, "limit": 100},
    {"budget": 1_000, "around": "4", "limit": 5},
    {"budget": 1_000, "around": "2", "limit": 5},
    {"budget": 700, "offset": 1},
    {"budget": 200},
    {"budget": 2_500, "limit": 3, "offset": 3},
    {"budget": 200_000},
]
EXTRA_URIS = ["no-such-chat", " ", "", " nginx ", "&lt;escaped&gt;", "<escaped>", "&amp;", "NGINX"]
EXPORTS: list[dict[str, Any]] = [
    {},
    {"format": "json"},
    {"project": "homelab"},
    {"project": "Homelab", "format": "json"},
    {"project": "Naïve ☃", "format": "json"},
    {"project": "HOMELAB"},
    {"source": "claude"},
    {"source": "pastchats", "project": "baking"},
    {"source": "nowhere", "format": "json"},
    {"source": "nowhere"},
]


def full_read(source: Any, uri: str, case: dict[str, Any], as_json: bool) -> str:
    arguments = {"offset": 0, "limit": 40, "around": None, "budget": 12_000} | case
    try:
        output, text = read_page.read(cast("Library", source), uri, **arguments)
    except Exception as exc:
        return f"raises {type(exc).__name__}"
    return output.model_dump_json(indent=2) if as_json else text


def lean_read(home: Path, uri: str, case: dict[str, Any], as_json: bool) -> str | None:
    arguments = {"offset": 0, "limit": 40, "around": None, "budget": 12_000} | case
    connection = catalog_read.open_current(str(home))
    assert connection is not None, "the catalog should be current"
    try:
        return cli_read.read_text(connection, uri, as_json=as_json, **arguments)
    finally:
        connection.close()


def lean_export(home: Path, case: dict[str, Any]) -> str:
    arguments = {"project": None, "source": None, "format": "jsonl"} | case
    connection = catalog_read.open_current(str(home))
    assert connection is not None, "the catalog should be current"
    stream = io.StringIO()
    try:
        count = cli_read.export(connection, stream, **arguments)
    finally:
        connection.close()
    return f"{count}\n{stream.getvalue()}"


def full_export(source: Any, case: dict[str, Any]) -> str:
    stream = io.StringIO()
    count = export(source, stream, **case)
    return f"{count}\n{stream.getvalue()}"


def assert_reads_alike(home: Path, library: Library) -> int:
    """Every read case on every chat (and on uris naming none): the lean answer is the store's and the
    catalog's, or None where they raise. Returns how many answers were compared."""
    uris = sorted(cid for cid, _ in library.store.titles())
    compared = 0
    with Catalog.read(home) as catalog:
        assert catalog is not None
        for uri in [*uris, *EXTRA_URIS]:
            for case in READS:
                for as_json in (False, True):
                    lean = lean_read(home, uri, case, as_json)
                    store, from_catalog = full_read(library, uri, case, as_json), full_read(catalog, uri, case, as_json)
                    assert store == from_catalog, (uri, case)
                    if lean is None:
                        assert store.startswith("raises "), (uri, case, store)
                    else:
                        assert lean == store, (uri, case, as_json)
                        compared += 1
    return compared


def assert_exports_alike(home: Path, library: Library) -> None:
    with Catalog.read(home) as catalog:
        assert catalog is not None
        for case in EXPORTS:
            lean = lean_export(home, case)
            assert lean == full_export(library, case) == full_export(catalog, case), case


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Library]:
    home = tmp_path_factory.mktemp("chats") / "store"
    library = Library.open(home, embedder=HashEmbedder())
    many = [f"Question number {i} about ZFS and nginx" if i % 2 == 0 else f"Answer {i}. " * 30 for i in range(57)]
    library.import_conversations(
        [
            *chats(),
            conversation("<escaped>", ["a uri that needs escaping", "and <chat uri='x'> text"]),
            conversation("&amp;", ["a uri that is an entity"]),
            conversation("long", many, title="A chat of 57 messages", project="homelab", day=9),
            conversation("empty title", ["\u200b", "‹chat› \x00 control \x1f chars \u2028 and \ud7ff"], title=" "),
        ]
    )
    return home, library


def test_every_page_of_every_chat_reads_as_the_tool_reads_it(store: tuple[Path, Library]) -> None:
    home, library = store
    assert assert_reads_alike(home, library) > 500


def test_every_export_format_and_filter_writes_the_same_bytes(store: tuple[Path, Library]) -> None:
    home, library = store
    assert_exports_alike(home, library)


def test_random_pages_read_as_the_tool_reads_them(store: tuple[Path, Library]) -> None:
    home, library = store
    chooser = random.Random(9)
    for _ in range(150):
        case = {
            "offset": chooser.choice([0, 1, 3, 20, 56, 60]),
            "limit": chooser.choice([1, 2, 5, 40, 100]),
            "budget": chooser.choice([300, 900, 1_500, 4_000, 12_000]),
        }
        if chooser.random() < 0.5:
            case["around"] = chooser.choice(["1", "3", "#30", "57", "long-m10", "long-m56"])
        as_json = chooser.random() < 0.5
        assert lean_read(home, "long", case, as_json) == full_read(library, "long", case, as_json), case


def test_after_growth_and_deletes_read_and_export_are_still_the_tools(tmp_path: Path) -> None:
    home = tmp_path / "store"
    library = Library.open(home, embedder=HashEmbedder())
    library.import_conversations(chats())
    grown = conversation("bread", ["Sourdough smells", "Feed it.", "Still sour?", "Wait."], project="baking", day=1)
    library.import_conversations([grown], embed=False)
    assert delete(library, ["lab2", "unicode"]) == ["lab2", "unicode"]
    assert assert_reads_alike(home, library) > 100
    assert_exports_alike(home, library)
    for uri in ("lab2", "unicode"):
        assert lean_read(home, uri, {}, False) is None  # the tool says it is not there


def test_message_times_are_written_as_pydantic_writes_them(store: tuple[Path, Library]) -> None:
    home, library = store
    for case in ({}, {"around": "dated-m4", "limit": 1}):
        lean = lean_read(home, "dated", case, True)
        assert lean is not None
        assert lean == full_read(library, "dated", case, True)
        assert ".000007Z" in lean  # the chat's messages carry microseconds


def test_attribute_escaping_is_html_escape() -> None:
    chooser = random.Random(3)
    alphabet = "ab &<>\"'\t\n\u00a0é&amp;#x27;"
    for _ in range(500):
        value = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 12)))
        assert attr(value) == html.escape(" ".join(value.split()), quote=True)
