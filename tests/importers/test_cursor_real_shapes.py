"""Cursor databases in the shapes each Cursor version left: inline composers (late 2024), prompt history
only, and current bubbles whose `clientStartTime` is a timer rather than a date."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from .conftest import build_vscdb

WORKSPACE_2024 = "cursor:8a1c2e3f-0000-4000-8000-000000000001"
UNTITLED_2024 = "cursor:8a1c2e3f-0000-4000-8000-000000000002"
TAB_2024 = "cursor:d2f0e6a1-aaaa-4000-8000-000000000009"
COMPOSER_2025 = "cursor:4c6e8a0b-1111-4000-8000-00000000000f"


@pytest.fixture
def cursor_user(fixtures: Path, tmp_path: Path) -> Path:
    """A Cursor `User` folder: a 2025 global database, a November 2024 workspace, a prompts-only one."""
    shapes = fixtures / "cursor-versions"
    user = tmp_path / "Cursor" / "User"
    build_vscdb(user / "globalStorage" / "state.vscdb", json.loads((shapes / "global-2025.json").read_text()))
    for name, spec, folder in [
        ("a11ce", "workspace-2024-11.json", "file:///home/ana/src/web%20shop"),
        ("b0b00", "prompts-only.json", "file:///home/ana/src/legacy"),
    ]:
        build_vscdb(user / "workspaceStorage" / name / "state.vscdb", json.loads((shapes / spec).read_text()))
        (user / "workspaceStorage" / name / "workspace.json").write_text(json.dumps({"folder": folder}))
    return user


def test_cursor_composer_chats_stored_inline_in_an_older_workspace_are_imported(
    cursor_user: Path, import_fixture
) -> None:
    imported = import_fixture(cursor_user)

    assert {c.id for c in imported.conversations} == {WORKSPACE_2024, UNTITLED_2024, TAB_2024, COMPOSER_2025}
    chat = imported.chat(WORKSPACE_2024)
    assert chat.title == "Debounce search input"
    assert chat.project == "/home/ana/src/web shop"
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant"]
    assert imported.chat(UNTITLED_2024).title == "why is the bundle 2 MB?"
    assert imported.chat(TAB_2024).project == "/home/ana/src/web shop"
    assert imported.found("custom hook useDebounce")[0] == WORKSPACE_2024


def test_cursor_message_times_are_dates_never_the_relative_timer(cursor_user: Path, import_fixture) -> None:
    imported = import_fixture(cursor_user)

    current = imported.chat(COMPOSER_2025)
    assert [m.created_at for m in current.messages] == [
        None,  # a user bubble of this version records no time
        datetime(2025, 7, 12, 6, 0, 4, tzinfo=UTC),  # clientRpcSendTime, not clientStartTime 4411.5
        datetime(2025, 7, 12, 6, 14, tzinfo=UTC),  # createdAt
        None,  # only clientStartTime: a timer since the window opened
    ]
    assert current.created_at == datetime(2025, 7, 12, 6, 0, tzinfo=UTC)
    inline = imported.chat(WORKSPACE_2024)
    assert inline.messages[1].created_at == datetime(2024, 11, 18, 8, 0, 5, 123000, tzinfo=UTC)
    every_time = [t for c in imported.conversations for t in (c.created_at, c.updated_at)]
    assert min(every_time).year >= 2024


def test_cursor_a_database_with_only_prompt_history_says_why_it_gave_no_chats(
    cursor_user: Path, import_fixture
) -> None:
    imported = import_fixture(cursor_user)

    assert "skipped workspaceStorage/b0b00/state.vscdb: holds only Cursor's prompt history" in imported.summary
    assert "ignored 1 message of unknown bubble type '7'" in imported.summary


def test_cursor_prompt_history_alone_is_reported_not_silently_empty(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    database = build_vscdb(
        tmp_path / "state.vscdb", json.loads((fixtures / "cursor-versions" / "prompts-only.json").read_text())
    )

    imported = import_fixture(database)

    assert imported.conversations == []
    assert "0 new" in imported.summary
    assert "state.vscdb: holds only Cursor's prompt history (aiService.prompts/generations" in imported.summary
