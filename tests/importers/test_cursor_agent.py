"""Cursor's agent transcripts (`~/.cursor/projects/<project>/agent-transcripts`): the current JSONL per
chat with its subagents, the earlier flat JSONL, and the first plain-text transcripts."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers import registry
from importers.cursor_agent import CursorAgentImporter

CHAT = "cursor-agent:3f2e1d0c-9b8a-4776-8655-443322110099"
SUBAGENT = f"{CHAT}:explore-1a2b"
FLAT = "cursor-agent:7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918"
TEXT = "cursor-agent:b1a2c3d4-e5f6-4789-8abc-def012345678"
WHEN = datetime(2026, 2, 18, 7, 33, 20, tzinfo=UTC)


@pytest.fixture
def cursor_home(fixtures: Path, tmp_path: Path) -> Path:
    """The fixture's `.cursor`, its transcripts dated as Cursor last wrote them (git keeps no times)."""
    home = tmp_path / ".cursor"
    shutil.copytree(fixtures / "cursor-agent" / ".cursor", home)
    for transcript in CursorAgentImporter().session_files(home):
        os.utime(transcript, (WHEN.timestamp(), WHEN.timestamp()))
    return home


def test_cursor_agent_transcript_is_the_users_queries_and_the_agents_replies(cursor_home: Path, import_fixture) -> None:
    imported = import_fixture(cursor_home)
    chat = imported.chat(CHAT)

    assert chat.title == "why does `vite build` ignore my `base` option?"
    assert chat.project == "/home/ana/src/vite"  # the Workspace Path in Cursor's <user_info>
    assert [(m.role, m.text) for m in chat.messages if m.role == "user"] == [
        ("user", "why does `vite build` ignore my `base` option?"),
        ("user", "set it in ci.yml then"),
    ]
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    texts = " ".join(m.text for m in chat.messages)
    for left_out in ("user_info", "attached_files", "BASE is unset in CI"):  # Cursor's context, the thinking
        assert left_out not in texts
    assert (chat.created_at, chat.updated_at) == (WHEN, WHEN)  # transcripts carry no times of their own


def test_cursor_agent_subagents_and_older_transcripts_are_chats_of_the_same_project(
    cursor_home: Path, import_fixture
) -> None:
    imported = import_fixture(cursor_home)

    assert sorted(c.id for c in imported.conversations) == sorted([CHAT, SUBAGENT, FLAT, TEXT])
    assert {c.project for c in imported.conversations} == {"/home/ana/src/vite"}
    assert imported.chat(SUBAGENT).title == "Subagent: Find where BASE is read in the build scripts"
    text = imported.chat(TEXT)
    assert [(m.role, m.text) for m in text.messages] == [
        ("user", "add a preview script"),
        ("assistant", "I'll add it to package.json.\n[tool Edit: package.json]"),
        ("tool", "[tool result: The file package.json has been updated.]"),
        ("assistant", 'Added `"preview": "vite preview"`.'),
    ]


def test_cursor_agent_project_folder_is_found_on_this_machine_when_nothing_names_it(
    fixtures: Path, tmp_path: Path, read_all
) -> None:
    workspace = tmp_path / "src" / "web.app"
    workspace.mkdir(parents=True)
    slug = str(workspace).strip("/").replace("/", "-").replace(".", "-")
    transcripts = tmp_path / ".cursor" / "projects" / slug / "agent-transcripts"
    transcripts.mkdir(parents=True)
    flat = next((fixtures / "cursor-agent").rglob("7e6d5c4b-*.jsonl"))
    shutil.copy(flat, transcripts / flat.name)

    [chat], _ = read_all(CursorAgentImporter(), tmp_path / ".cursor")

    assert chat.project == str(workspace)


def test_cursor_agent_transcripts_are_detected_and_found_by_sync(fixtures: Path) -> None:
    root = fixtures / "cursor-agent" / ".cursor"

    assert registry.detect(root).name == "cursor-agent"
    assert registry.detect(next(root.rglob("*.txt"))).name == "cursor-agent"
    assert len(CursorAgentImporter().session_files(root / "projects")) == 4
    assert CursorAgentImporter().default_locations({}, Path("/home/ana")) == [Path("/home/ana/.cursor/projects")]
