"""GitHub Copilot Chat sessions as VS Code keeps them: the flat JSON of VS Code 1.90 and 1.104, the
append log of 1.109 and later, an empty window's sessions, and broken files."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers import registry
from importers.copilot_chat import CopilotChatImporter

USER = "copilot-chat/Code/User"
WORKSPACE = f"{USER}/workspaceStorage/8d5b3f0e6a1c4e2b9f7d3a5c1e8b6d40"
CART = "copilot-chat:4b0f9a7c-2d3e-4f51-8a6b-7c9d0e1f2a3b"
RETRY = "copilot-chat:9c8e7d6f-5a4b-4c3d-8e2f-1a0b9c8d7e6f"
REGEX = "copilot-chat:1e2d3c4b-5a69-4788-9766-554433221100"


def test_copilot_agent_session_reads_as_the_chat_shows_it(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / USER)
    chat = imported.chat(CART)

    assert chat.title == "the cart total is off by one cent for 3 x 0.1"  # the first line, as VS Code titles it
    assert chat.project == "/home/ana/src/shop"
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "user", "assistant"]
    assert chat.messages[1].text == (
        "[tool copilot_readFile: Read cart.ts]\n\n"
        "The sum is done in floating point in `cart.ts`, so `0.1 + 0.1 + 0.1` gives `0.30000000000000004`. "
        "Summing integer cents fixes it.\n\n"
        "[tool edit: cart.ts]\n\n"
        "[tool run_in_terminal: npm test -- cart]\n\n"
        "The cart tests pass."
    )
    assert chat.messages[1].created_at == datetime(2025, 9, 9, 10, 0, 21, 450000, tzinfo=UTC)
    assert "Floating point sum" not in " ".join(m.text for m in chat.messages)  # thinking is left out
    assert imported.found("integer cents") == [CART]


def test_copilot_log_sessions_are_replayed_as_vs_code_replays_them(fixtures: Path, import_fixture) -> None:
    chat = import_fixture(fixtures / USER).chat(RETRY)

    assert chat.title == "Retry middleware on 429"  # set later in the log
    assert [m.text for m in chat.messages if m.role == "user"] == [
        "what does the retry middleware do on a 429?",
        "make it retry up to three times with backoff",  # the undone request is gone
    ]
    assert (chat.created_at, chat.updated_at) == (
        datetime(2026, 3, 27, 8, 26, 40, tzinfo=UTC),
        datetime(2026, 3, 27, 8, 28, 17, tzinfo=UTC),
    )


def test_copilot_import_says_what_it_left_out(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / USER)

    assert "3 new, 0 updated, 0 unchanged, 2 skipped" in imported.summary
    assert "superseded by 9c8e7d6f-5a4b-4c3d-8e2f-1a0b9c8d7e6f.jsonl" in imported.summary
    assert "the log does not start with the session (kind 0)" in imported.summary
    assert "the last line was cut off mid-write" in imported.summary


def test_copilot_empty_window_sessions_have_no_project(fixtures: Path, import_fixture) -> None:
    chat = import_fixture(fixtures / USER).chat(REGEX)

    assert chat.project is None
    assert chat.created_at == datetime(2024, 6, 20, 16, 13, 20, tzinfo=UTC)
    assert [m.role for m in chat.messages] == ["user", "assistant"]


@pytest.mark.parametrize(
    "relative",
    [
        USER,
        f"{USER}/workspaceStorage",
        f"{WORKSPACE}/chatSessions",
        f"{WORKSPACE}/chatSessions/9c8e7d6f-5a4b-4c3d-8e2f-1a0b9c8d7e6f.jsonl",
        f"{USER}/globalStorage/emptyWindowChatSessions/1e2d3c4b-5a69-4788-9766-554433221100.json",
    ],
)
def test_copilot_sessions_are_detected_from_any_of_their_folders(fixtures: Path, relative: str) -> None:
    assert registry.detect(fixtures / relative).name == "copilot-chat"


def test_a_cursor_user_folder_is_still_cursors(fixtures: Path, tmp_path: Path) -> None:
    user = tmp_path / "Cursor" / "User"
    shutil.copytree(fixtures / WORKSPACE, user / "workspaceStorage" / "8d5b3f0e")
    (user / "workspaceStorage" / "8d5b3f0e" / "state.vscdb").write_bytes(b"SQLite format 3\x00")

    assert registry.detect(user).name == "cursor"


def test_copilot_sync_appends_to_a_log_and_reads_only_the_session_that_grew(fixtures: Path, tmp_path: Path) -> None:
    from importers.sources.sync import Syncer
    from storage.embedding.embedder import HashEmbedder
    from storage.library import Library

    home = tmp_path / "home"
    shutil.copytree(fixtures / USER, home / ".config" / "Code" / "User")
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        first = Syncer(library, env={}, home=home, formats=["copilot-chat"]).run_once()
        assert first.files_new == 4  # the superseded flat file is not a session file
        log = next((home / ".config/Code/User/workspaceStorage").rglob("9c8e7d6f-*.jsonl"))
        with log.open("a", encoding="utf-8") as handle:  # VS Code finishes the line it was writing
            handle.write('":1}\n' + json.dumps({"kind": 1, "k": ["customTitle"], "v": "Retry with backoff"}) + "\n")
        again = Syncer(library, env={}, home=home, formats=["copilot-chat"]).run_once()
        assert (again.files_grown, again.files_unchanged, again.conversations_updated) == (1, 3, 1)
        assert library.get(RETRY).title == "Retry with backoff"
        assert library.get(CART).project == "/home/ana/src/shop"
    finally:
        library.close()


def test_copilot_default_locations_cover_every_editor_and_the_empty_window() -> None:
    home = Path("/Users/ana")

    found = CopilotChatImporter().default_locations({}, home, "darwin")

    assert home / "Library/Application Support/Code/User/workspaceStorage" in found
    assert home / "Library/Application Support/Code - Insiders/User/globalStorage/emptyWindowChatSessions" in found
    assert home / ".vscode-server/data/User/workspaceStorage" in found


def test_copilot_replies_keep_no_empty_fence_where_an_edit_was(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "copilot-chat-edits/Code/User")

    [chat] = imported.conversations
    assert [m.text for m in chat.messages if m.role == "assistant"] == [
        "Sum integer cents, then divide once:\n\n[tool edit: cart.ts]\n\nThe rounding now happens once, on the total."
    ]
