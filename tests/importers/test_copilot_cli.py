"""GitHub Copilot CLI: session event logs in the shapes of Copilot CLI 1.0 (a folder per session,
sub-agents, autopilot, skills, a log cut off mid-write) and 0.0.369 (one file per session)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.copilot_cli import CopilotCliImporter

CURRENT = "copilot-cli/shapes-1.0/session-state"
EARLY = "copilot-cli/shapes-0.0.369/session-state"
TILES = "copilot-cli:2f8d9c41-7a3e-4b6d-9e1f-0c2b3a4d5e6f"
TODOS = "copilot-cli:3a9e0d52-8b4f-4c7e-af20-1d3c4b5e6f70"
DEPLOY = "copilot-cli:7c4d1e2f-3a5b-4c6d-8e7f-9a0b1c2d3e4f"


def test_copilot_cli_sessions_read_as_the_timeline_shows_them(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / CURRENT)

    chat = imported.chat(TILES)
    assert (chat.source, chat.title, chat.project) == ("copilot-cli", "Tile flicker on zoom", "/home/ana/src/atlas")
    assert chat.created_at == datetime(2026, 7, 20, 8, 0, tzinfo=UTC)
    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "why do tiles flicker when I zoom?\n\n[file zoom.ts]"),
        ("assistant", "Let me read the zoom handler.\n\n[tool view: /home/ana/src/atlas/src/zoom.ts]"),
        ("tool", "[tool result: 1. export function onZoom(level: number) { 2. cache.clear()]"),
        (
            "assistant",
            "Every zoom step clears the tile cache, so each tile is fetched again. "
            "Keep the cache and evict by zoom level instead.",
        ),
        ("user", "do it"),
        ("assistant", "[tool edit: /home/ana/src/atlas/src/zoom.ts]"),
        ("tool", "[tool error: old_str matched 2 places]"),
        ("assistant", "Done: zoom now evicts only the other levels' tiles."),
    ]
    assert imported.found("Probably") == []  # reasoning
    assert not any("cache.get" in m.text for c in imported.conversations for m in c.messages)  # a sub-agent's
    assert imported.found("pdf") == []  # a skill's hidden prompt
    assert "unknown type 'hologram.flash'" in imported.summary


def test_copilot_cli_keeps_what_a_log_cut_off_mid_write_holds(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / CURRENT)

    chat = imported.chat(TODOS)
    assert [m.text for m in chat.messages] == ["list the TODOs", "There are three: two in zoom.ts, one in render.ts."]
    assert chat.project == "C:\\Users\\ana\\src\\atlas"


def test_copilot_cli_early_sessions_are_one_file_each(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / EARLY)

    [chat] = imported.conversations
    assert (chat.id, chat.title, chat.project) == (DEPLOY, "what does the deploy script do?", None)
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "assistant"]
    assert chat.messages[1].text == "[tool bash: cat deploy.sh]"


def test_copilot_cli_is_found_in_its_home_on_every_os(fixtures: Path, tmp_path: Path) -> None:
    importer = CopilotCliImporter()
    home = tmp_path / "home"
    assert importer.default_locations({}, home) == [home / ".copilot" / "session-state"]
    assert importer.default_locations({"COPILOT_HOME": str(tmp_path / "c")}, home) == [tmp_path / "c" / "session-state"]
    assert len(importer.session_files(fixtures / CURRENT)) == 2
    assert len(importer.session_files(fixtures / "copilot-cli/shapes-1.0")) == 2
    for path in (CURRENT, EARLY, f"{CURRENT}/2f8d9c41-7a3e-4b6d-9e1f-0c2b3a4d5e6f/events.jsonl"):
        assert registry.detect(fixtures / path).name == "copilot-cli"


def test_reimporting_copilot_cli_adds_nothing(fixtures: Path, import_fixture) -> None:
    first = import_fixture(fixtures / CURRENT)
    again = import_fixture(fixtures / CURRENT, library=first.library)

    assert f"0 new, 0 updated, {len(first.conversations)} unchanged" in again.summary
