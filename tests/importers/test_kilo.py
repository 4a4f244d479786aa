"""Kilo Code 7 and the `kilo` CLI: `kilo.db`, OpenCode's database under Kilo's name, with the
columns Kilo adds (shapes of Kilo 7.6: a session with a subagent's task, reasoning, a tool, a
file pulled in with @, and a broken row)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from importers import registry
from importers.kilo import KiloImporter

DATABASE = "kilo/shapes-7.6/kilo.db"
TILES = "kilo:ses_3a1f0c2e9ffeAbCdEfGhIjKlMn"
EXPLORE = "kilo:ses_3a1f0b9a2ffe0pQrStUvWxYzAb"


def test_kilo_sessions_read_as_kilo_shows_them(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / DATABASE)

    assert sorted(c.id for c in imported.conversations) == sorted([TILES, EXPLORE])
    chat = imported.chat(TILES)
    assert (chat.source, chat.title, chat.project) == (
        "kilo",
        "Tiles render blurry on retina screens",
        "/home/ana/src/atlas",
    )
    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "tiles render blurry on retina screens\n\n[file tiles.ts]"),
        (
            "assistant",
            "The canvas is sized in CSS pixels; it needs devicePixelRatio.\n\n"
            "[tool edit: /home/ana/src/atlas/src/tiles.ts]",
        ),
        ("tool", "[tool result: Edit applied successfully.]"),
        ("user", "and the labels?"),
        ("assistant", "Labels are drawn on the same canvas, so they are sharp now too."),
    ]
    assert chat.created_at.timestamp() == 1781000000
    assert imported.found("probably") == []  # the reasoning is not the reply
    assert "Broken row" not in [c.title for c in imported.conversations]
    assert "ses_3a1f0a0000feBrokenRowXyz01" in imported.summary


def test_kilo_is_found_in_its_data_folder_on_every_os(fixtures: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "kilo"
    data.mkdir(parents=True)
    shutil.copy(fixtures / DATABASE, data / "kilo.db")

    importer = KiloImporter()
    assert importer.default_locations({}, home) == [data]
    assert importer.default_locations({"XDG_DATA_HOME": str(tmp_path / "xdg")}, home) == [tmp_path / "xdg" / "kilo"]
    assert importer.session_files(data) == [data / "kilo.db"]
    assert registry.detect(data).name == "kilo"
    assert registry.detect(data / "kilo.db").name == "kilo"
    assert registry.detect(fixtures / "opencode/real-1.18/opencode.db").name == "opencode"


def test_reimporting_kilo_adds_nothing(fixtures: Path, import_fixture) -> None:
    first = import_fixture(fixtures / DATABASE)
    again = import_fixture(fixtures / DATABASE, library=first.library)

    assert f"0 new, 0 updated, {len(first.conversations)} unchanged" in again.summary


def test_a_session_kilo_never_named_is_titled_by_its_first_prompt(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    database = tmp_path / "kilo.db"
    shutil.copy(fixtures / DATABASE, database)
    connection = sqlite3.connect(database)
    with connection:  # the default title OpenCode (and so Kilo) gives a session until it names it
        connection.execute("UPDATE session SET title = 'New session - 2026-06-08T20:53:20.000Z'")
    connection.close()

    imported = import_fixture(database)

    assert imported.chat(TILES).title == "tiles render blurry on retina screens [file tiles.ts]"
