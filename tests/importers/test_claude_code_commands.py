"""Claude Code 1.0-2.0 transcripts: slash commands and bash mode as markup, summaries that title another
session, and the 2.0 subagent files kept beside the sessions."""

from __future__ import annotations

import shutil
from pathlib import Path

from importers.claude_code import ClaudeCodeImporter

IMPORTER = ClaudeCodeImporter()
PROJECT = "claude-code-commands/projects/-home-ana-src-vite"
INIT = "claude-code:3c1e5f70-0a1b-4c2d-8e3f-4a5b6c7d8e01"
REVIEW = "claude-code:9d2f6a81-1b2c-4d3e-9f40-5b6c7d8e9f02"
COMPACT = "claude-code:e4a7b9c0-2c3d-4e4f-8a51-6c7d8e9fa003"
SUBAGENT = f"{INIT}:agent-5f3a9c2e"


def test_claude_code_slash_commands_are_the_users_command_never_markup(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / PROJECT)

    texts = [m.text for c in imported.conversations for m in c.messages] + [c.title for c in imported.conversations]
    assert not [t for t in texts if "<command-" in t or "<local-command" in t or "<bash-" in t]
    review = imported.chat(REVIEW)
    assert review.title == "/review src/main.tsx"
    assert review.messages[0].text == "/review src/main.tsx"
    compact = imported.chat(COMPACT)
    assert compact.title == "/compact"  # the 1.0 order: name first, message the bare name
    assert [m.role for m in compact.messages] == ["user", "tool", "user", "assistant"]


def test_claude_code_command_output_and_bash_mode_read_as_the_transcript_shows_them(
    fixtures: Path, import_fixture
) -> None:
    chat = import_fixture(fixtures / PROJECT).chat(INIT)

    assert [(m.role, m.text) for m in chat.messages[4:8]] == [
        ("user", "/model opus"),
        ("tool", "[tool result: Set model to opus (claude-opus-4-1-20250805)]"),
        ("user", "! npm run build"),
        ("tool", "[tool result: vite v5.4.2 building for production... ✓ 31 modules transformed.]"),
    ]
    assert chat.messages[0].text == "/init"


def test_claude_code_a_summary_in_another_session_file_titles_the_session_it_names(
    fixtures: Path, import_fixture
) -> None:
    imported = import_fixture(fixtures / PROJECT)

    assert imported.chat(INIT).title == "Vite build sourcemaps disabled"  # its last message's summary
    assert imported.chat(REVIEW).title == "/review src/main.tsx"  # not the summaries it holds


def test_claude_code_one_session_file_alone_still_finds_its_summary_beside_it(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, fixtures / PROJECT / "3c1e5f70-0a1b-4c2d-8e3f-4a5b6c7d8e01.jsonl")

    assert chat.title == "Vite build sourcemaps disabled"


def test_claude_code_2_0_subagent_files_beside_the_sessions_are_chats(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / PROJECT)

    assert sorted(c.id for c in imported.conversations) == sorted([INIT, REVIEW, COMPACT, SUBAGENT])
    subagent = imported.chat(SUBAGENT)
    assert subagent.title == "Subagent: Find every place build.sourcemap is set"
    assert [m.role for m in subagent.messages] == ["user", "assistant", "tool", "assistant"]
    assert subagent.project == "/home/ana/src/vite"
    assert "4 new, 0 updated, 0 unchanged, 0 skipped" in imported.summary


def test_claude_code_a_subagent_file_copied_elsewhere_keeps_its_parent_session(
    fixtures: Path, tmp_path: Path, read_all
) -> None:
    copy = tmp_path / "agent-5f3a9c2e.jsonl"
    shutil.copy(fixtures / PROJECT / "agent-5f3a9c2e.jsonl", copy)

    [chat], report = read_all(IMPORTER, copy)

    assert chat.id == SUBAGENT
    assert report.skipped == []
