"""Gemini CLI since March 2026: a subagent's recording nested under its parent session's folder, and
recordings whatever their file is named."""

from __future__ import annotations

import shutil
from pathlib import Path

from importers import registry
from importers.gemini import GeminiImporter

HOME = "gemini-subagents/.gemini"
MAIN = "gemini:1f2e3d4c-5b6a-4789-8a0b-c1d2e3f4a5b6"
SUBAGENT = "gemini:7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f"
SUBAGENT_FILE = "tmp/tiles/chats/1f2e3d4c-5b6a-4789-8a0b-c1d2e3f4a5b6/7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f.jsonl"


def test_gemini_a_subagent_recording_is_a_chat_of_its_own(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / HOME)

    assert [c.id for c in imported.conversations] == [MAIN, SUBAGENT]
    assert sum(len(c.messages) for c in imported.conversations) == 10
    subagent = imported.chat(SUBAGENT)
    assert subagent.title == "Subagent: Trace how the tile cache evicts tiles on zoom out"
    assert [m.role for m in subagent.messages] == ["user", "assistant", "tool", "assistant"]
    assert subagent.project == "/home/ana/src/tiles"
    main = imported.chat(MAIN)
    assert main.title == "Tiles flicker on zoom out"
    assert [m.role for m in main.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]


def test_gemini_sync_finds_subagent_recordings(fixtures: Path) -> None:
    files = GeminiImporter().session_files(fixtures / HOME / "tmp")

    assert [f.relative_to(fixtures / HOME).as_posix() for f in files] == [
        SUBAGENT_FILE,
        "tmp/tiles/chats/session-2026-08-10T09-30-1f2e3d4c.jsonl",
    ]


def test_gemini_a_recording_not_named_session_is_read_with_or_without_format(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    renamed = tmp_path / "tile-flicker.jsonl"
    shutil.copy(next((fixtures / HOME / "tmp/tiles/chats").glob("session-*.jsonl")), renamed)

    assert registry.choose(renamed, "gemini").name == "gemini"
    assert registry.detect(renamed).name == "gemini"
    imported = import_fixture(renamed, "gemini")
    assert [c.id for c in imported.conversations] == [MAIN]
