"""Gemini CLI homes as the CLI leaves them: legacy JSON sessions, the project registry, JSONL sessions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

WEATHER = "gemini:2c4e6a80-1111-4000-8000-0000000000a1"
ATLAS_OLD = "gemini:5b7d9f10-2222-4000-8000-0000000000b2"
ATLAS_NEW = "gemini:8e0a2c40-3333-4000-8000-0000000000c3"


def test_gemini_a_whole_file_read_keeps_the_file_content_not_empty(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "gemini-home" / ".gemini")
    chat = imported.chat(WEATHER)

    tools = [m.text for m in chat.messages if m.role == "tool"]
    assert tools[0].startswith("[tool result: # weather A CLI that converts units between metric and imperial.")
    assert "(empty)" not in " ".join(tools)
    assert tools[1] == '[tool error: Tool "run_shell_command" was cancelled by the user.]'
    assert imported.found("pipx install weather-units") == [WEATHER]


def test_gemini_hash_folders_are_named_by_the_projects_registry(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "gemini-home" / ".gemini")

    assert {c.id: c.project for c in imported.conversations} == {
        WEATHER: "/home/ana/src/weather",  # registry root whose sha256 is the folder's name
        ATLAS_OLD: "C:\\users\\ana\\src\\atlas",  # lower-cased registry key, found through the slug's sessions
        ATLAS_NEW: "C:\\users\\ana\\src\\atlas",  # slug folder with its .project_root marker
    }


def test_gemini_a_single_legacy_file_still_finds_its_project(fixtures: Path, import_fixture) -> None:
    tmp = fixtures / "gemini-home" / ".gemini" / "tmp"
    legacy = next(tmp.glob("6ac4*/chats/session-*.json"))

    imported = import_fixture(legacy)

    assert [c.project for c in imported.conversations] == ["C:\\users\\ana\\src\\atlas"]


def test_gemini_sessions_keep_titles_times_and_what_the_user_typed(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "gemini-home" / ".gemini")
    weather, new = imported.chat(WEATHER), imported.chat(ATLAS_NEW)

    assert weather.title == "Summarise the README of this repo"
    assert (weather.created_at, weather.updated_at) == (
        datetime(2025, 10, 2, 9, 12, 3, 114000, tzinfo=UTC),
        datetime(2025, 10, 2, 9, 14, 41, tzinfo=UTC),  # its last message
    )
    assert [m.role for m in weather.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]
    assert new.title == "Tile cache key misses zoom"
    assert new.messages[0].text == "explain @src/cache.ts"  # displayContent, not the inlined file
    assert all(m.created_at and m.created_at.year >= 2025 for c in imported.conversations for m in c.messages)


def test_gemini_import_summary_reports_unknown_record_types(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "gemini-home" / ".gemini")

    assert "note: ignored 1 record of unknown type 'checkpoint'" in imported.summary
    assert "type 'info'" not in imported.summary
    assert "Gemini CLI copied it to tmp/weather" in imported.summary
    assert len(imported.conversations) == 3
