"""Cursor databases of May 2025 (empty tool records, a Windows workspace) and of 2026 (each chat's
workspace kept in the global `composer.composerHeaders` list), read as a whole `User` folder."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers._vscode import file_uri_path, uri_path

from .conftest import build_vscdb

MAY_2025 = "cursor:6b2f0d4e-7a1c-4e5b-9c3d-2f1e0a9b8c71"
SPACES = "cursor:0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c62"
PREVIEW = "cursor:5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c93"
WINDOWS_VITE = "C:\\Users\\ana\\src\\vite"


def _user(fixtures: Path, tmp_path: Path, version: str, storage_id: str) -> Path:
    shapes = fixtures / version
    user = tmp_path / "Cursor" / "User"
    build_vscdb(user / "globalStorage" / "state.vscdb", json.loads((shapes / "global.json").read_text()))
    workspace = user / "workspaceStorage" / storage_id
    build_vscdb(workspace / "state.vscdb", json.loads((shapes / "workspace.json").read_text()))
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///c%3A/Users/ana/src/vite"}))
    return user


@pytest.fixture
def may_2025(fixtures: Path, tmp_path: Path) -> Path:
    return _user(fixtures, tmp_path, "cursor-2025-05", "1a2b3c4d5e6f")


@pytest.fixture
def cursor_2026(fixtures: Path, tmp_path: Path) -> Path:
    return _user(fixtures, tmp_path, "cursor-2026", "9f8e7d6c5b4a39281706f5e4d3c2b1a0")


def test_cursor_empty_tool_records_are_not_tool_calls(may_2025: Path, import_fixture) -> None:
    chat = import_fixture(may_2025).chat(MAY_2025)

    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "hot reload stops working after I rename a component file"),
        ("assistant", "[tool run_terminal_cmd: npm ls @vitejs/plugin-react]"),
        (
            "assistant",
            "The file watcher keeps the old path; restart the dev server or upgrade @vitejs/plugin-react to 4.3.4, "
            "which follows renames.",
        ),
        ("user", "upgraded, works now"),
        ("assistant", "Good. The fix shipped in 4.3.4's changelog as 'handle renamed modules'."),
    ]


def test_cursor_a_windows_workspace_is_its_folder_as_cursor_shows_it(may_2025: Path, import_fixture) -> None:
    imported = import_fixture(may_2025)

    assert imported.chat(MAY_2025).project == WINDOWS_VITE
    assert imported.library.recent(project=WINDOWS_VITE.upper()).chats[0].uri == MAY_2025
    # `--project vite`: the folder name the editor shows finds the workspace's chats
    assert [c.uri for c in imported.library.recent(project="vite").chats] == [MAY_2025]
    assert imported.library.resolve_project("Vite") == (WINDOWS_VITE,)


def test_cursor_a_workspace_whose_chats_came_from_the_global_database_is_not_skipped(
    may_2025: Path, import_fixture
) -> None:
    imported = import_fixture(may_2025)

    assert "1 new, 0 updated, 0 unchanged, 0 skipped" in imported.summary
    assert "import Cursor's User folder" not in imported.summary


def test_cursor_a_workspace_database_alone_still_says_where_its_chats_are(may_2025: Path, import_fixture) -> None:
    imported = import_fixture(may_2025 / "workspaceStorage" / "1a2b3c4d5e6f" / "state.vscdb")

    assert imported.conversations == []
    assert "lists 1 composer chat(s) whose messages are kept in globalStorage/state.vscdb" in imported.summary


def test_cursor_2026_chats_take_their_workspace_and_name_from_the_global_list(
    cursor_2026: Path, import_fixture
) -> None:
    imported = import_fixture(cursor_2026)

    assert {c.id: c.project for c in imported.conversations} == {SPACES: WINDOWS_VITE, PREVIEW: WINDOWS_VITE}
    assert imported.chat(SPACES).title == "Build fails on paths with spaces"  # named only in the list
    assert imported.chat(PREVIEW).created_at == datetime(2026, 2, 20, 15, 6, 40, tzinfo=UTC)
    assert "2 new, 0 updated, 0 unchanged, 0 skipped" in imported.summary


def test_cursor_2026_global_database_alone_keeps_the_workspace_it_names(cursor_2026: Path, import_fixture) -> None:
    imported = import_fixture(cursor_2026 / "globalStorage" / "state.vscdb")

    assert imported.chat(SPACES).project == WINDOWS_VITE  # from the header's folder URI


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///c%3A/Users/ana/src/vite", "c:\\Users\\ana\\src\\vite"),  # the store spells it `C:\…`
        ("file:///home/ana/src/web%20shop", "/home/ana/src/web shop"),
        ("file://build-server/share/app", "\\\\build-server\\share\\app"),
        ("vscode-remote://ssh-remote%2Bbox/home/ana/app", "vscode-remote://ssh-remote%2Bbox/home/ana/app"),
    ],
)
def test_workspace_uris_become_the_paths_the_editor_shows(uri: str, path: str) -> None:
    assert file_uri_path(uri) == path
    assert uri_path({"scheme": "file", "path": "/c:/Users/ana/src/vite"}) == "c:\\Users\\ana\\src\\vite"
