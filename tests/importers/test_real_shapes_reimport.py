"""Importing any real-shape fixture a second time adds and changes nothing."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from importers.aider import AiderImporter

from .conftest import build_vscdb
from .test_amazon_q import amazon_q_database

SOURCES = [
    "aider/interrupted",
    "aider-0.86",
    "chatgpt-2025/export",
    "chatgpt-2025/conversation-68b0c1d2.json",
    "claude-branches",
    "claude-code-2.1",
    "claude-code-commands",
    "codex-2026",
    "copilot-chat/Code/User",
    "cline/Code/User",
    "cursor-agent/.cursor",
    "roo-code/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline",
    "kilo-code/AppData/Roaming/Code/User/globalStorage/kilocode.kilo-code/tasks",
    "cursor-versions",
    "cursor-2025-05",
    "cursor-2026",
    "gemini-home/.gemini",
    "gemini-subagents/.gemini",
    # More agents: files their tools wrote, and each version's shapes.
    "opencode/real-1.18/opencode.db",
    "opencode/real-1.1/storage",
    "opencode/shapes/storage",
    "qwen-code/real-0.15/projects",
    "qwen-code/shapes/projects",
    "continue/real-cn-1.5/sessions",
    "continue/shapes/sessions",
    "goose/sessions",
    "amazon-q/rows.json",
    "amazon-q/kiro-rows.json",
    "pi/sessions",
    "kimi-cli/.kimi",
    "kimi-code/.kimi-code",
    "openhands/.openhands/conversations",
    "openhands/.openhands/sessions",
]


@pytest.mark.parametrize("source", SOURCES)
def test_reimporting_a_real_shape_fixture_adds_nothing(
    source: str, fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    path = fixtures / source
    importer = AiderImporter(tz=UTC) if source.startswith("aider") else None
    if source.startswith("cursor-") and not source.startswith("cursor-agent"):  # a global database, from its rows
        path = build_vscdb(tmp_path / "state.vscdb", json.loads(next(path.glob("global*.json")).read_text()))
    if source.startswith("amazon-q/"):  # Amazon Q's and Kiro CLI's database, from its rows
        folder = "kiro-cli" if "kiro" in source else "amazon-q"
        path = amazon_q_database(fixtures, tmp_path / folder / "data.sqlite3", source)

    first = import_fixture(path, importer=importer)
    again = import_fixture(path, importer=importer, library=first.library)

    assert first.conversations
    assert f"0 new, 0 updated, {len(first.conversations)} unchanged" in again.summary
    assert again.conversations == first.conversations
