from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers.base import SourceError
from importers.claude_code import ClaudeCodeImporter, default_locations

IMPORTER = ClaudeCodeImporter()
SESSION = "5e55e000-1111-4000-8000-000000000001"


def _session_file(fixtures: Path) -> Path:
    return fixtures / "claude-code" / "projects" / "-home-ana-src-shop" / f"{SESSION}.jsonl"


def test_claude_code_session_becomes_one_conversation_with_workspace_project(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session_file(fixtures))

    assert chat.id == f"claude-code:{SESSION}"
    assert chat.source == "claude-code"
    assert chat.project == "/home/ana/src/shop"
    assert chat.url == _session_file(fixtures).resolve().as_uri()
    assert chat.created_at == datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
    assert chat.updated_at == datetime(2025, 6, 1, 9, 1, tzinfo=UTC)


def test_claude_code_title_comes_from_the_summary_of_this_session(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session_file(fixtures))

    assert chat.title == "Checkout test rounding fix"


def test_claude_code_streamed_records_join_and_tools_are_summarised(fixtures: Path, read_all) -> None:
    [chat], report = read_all(IMPORTER, _session_file(fixtures))

    assert [(m.id, m.role) for m in chat.messages] == [
        ("u-1", "user"),
        ("a-1", "assistant"),
        ("u-2:result", "tool"),
        ("a-4", "assistant"),
    ]
    assert chat.messages[1].text == "Let me run the tests.\n\n[tool Bash: pytest tests/test_checkout.py -x]"
    assert chat.messages[2].text.startswith("[tool error: FAILED tests/test_checkout.py::test_total")
    assert "ignored 1 content block of unknown type 'mystery_block'" in report.notes


def test_claude_code_leaves_out_thinking_meta_and_inline_sidechains(fixtures: Path, read_all) -> None:
    [chat], report = read_all(IMPORTER, _session_file(fixtures))
    texts = " ".join(m.text for m in chat.messages)

    assert "SECRET-THINKING" not in texts
    assert "META-NOISE" not in texts
    assert "INLINE-SIDECHAIN" not in texts
    assert any("1 inline subagent record" in note for note in report.notes)


def test_claude_code_file_cut_mid_line_keeps_the_complete_lines(fixtures: Path, read_all) -> None:
    cut = fixtures / "claude-code" / "projects" / "-home-ana-src-cut"

    [chat], report = read_all(IMPORTER, cut)

    assert [m.text for m in chat.messages] == ["Does the cut file keep this line?", "Yes, complete lines are kept."]
    assert any("cut off mid-write" in note for note in report.notes)
    assert report.skipped == []


def test_claude_code_projects_folder_includes_subagents_with_distinct_ids(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "claude-code" / "projects")
    by_id = {c.id: c for c in conversations}

    assert set(by_id) == {
        f"claude-code:{SESSION}",
        f"claude-code:{SESSION}:agent-a1b2c3",
        "claude-code:c0ffee00-0000-4000-8000-000000000009",
    }
    agent = by_id[f"claude-code:{SESSION}:agent-a1b2c3"]
    assert agent.title == "Subagent: Find every use of float in pricing code"
    assert agent.messages[1].text == "[tool Grep: float\\(]\n\nFound 3 uses in pricing.py."
    assert agent.project == "/home/ana/src/shop"


def test_claude_code_config_dir_is_read_through_its_projects_folder(fixtures: Path, tmp_path: Path, read_all) -> None:
    shutil.copytree(fixtures / "claude-code" / "projects", tmp_path / ".claude" / "projects")
    (tmp_path / ".claude" / "todos").mkdir()
    (tmp_path / ".claude" / "todos" / "x.jsonl").write_text('{"not": "a transcript"}\n')

    conversations, report = read_all(IMPORTER, tmp_path / ".claude")

    assert len(conversations) == 3
    assert report.skipped == []
    assert IMPORTER.detect(tmp_path / ".claude")


def test_claude_code_empty_session_is_skipped_with_no_messages(tmp_path: Path, read_all) -> None:
    (tmp_path / "s.jsonl").write_text('{"type":"summary","summary":"x","leafUuid":"y"}\n')

    conversations, report = read_all(IMPORTER, tmp_path)

    assert conversations == []
    assert [(s.where, s.reason) for s in report.skipped] == [("s.jsonl", "no messages")]


def test_claude_code_folder_without_transcripts_is_a_source_error(tmp_path: Path, read_all) -> None:
    with pytest.raises(SourceError, match="no Claude Code transcripts"):
        read_all(IMPORTER, tmp_path)


def test_claude_code_default_location_honours_claude_config_dir(tmp_path: Path) -> None:
    home = Path("/home/ana")

    assert default_locations({}, home) == [home / ".claude" / "projects"]
    assert default_locations({"CLAUDE_CONFIG_DIR": "/srv/claude"}, home) == [Path("/srv/claude/projects")]
    assert default_locations({"CLAUDE_CONFIG_DIR": "~/cc"}, home) == [home / "cc" / "projects"]
