from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers.base import SourceError
from importers.claude import ClaudeImporter

IMPORTER = ClaudeImporter()


def test_claude_export_folder_gives_ids_roles_text_times_and_link(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "claude" / "export-2025")

    [chat] = conversations
    assert chat.id == "claude:8f1c0000-0000-4000-8000-000000000010"
    assert chat.source == "claude"
    assert chat.title == "Nginx reverse proxy"
    assert chat.url == "https://claude.ai/chat/8f1c0000-0000-4000-8000-000000000010"
    assert chat.created_at == datetime(2025, 1, 20, 10, 0, tzinfo=UTC)
    assert chat.updated_at == datetime(2025, 1, 20, 11, 0, tzinfo=UTC)
    assert [(m.id, m.index, m.role) for m in chat.messages] == [
        ("msg-a", 0, "user"),
        ("msg-b", 1, "assistant"),
        ("msg-c", 2, "user"),
    ]
    assert chat.messages[1].created_at == datetime(2025, 1, 20, 10, 0, 20, tzinfo=UTC)


def test_claude_project_comes_from_projects_json_by_the_conversations_project_uuid(fixtures: Path, read_all) -> None:
    [new], _ = read_all(IMPORTER, fixtures / "claude" / "export-2025")
    old, _empty = read_all(IMPORTER, fixtures / "claude" / "export-2024")

    assert new.project == "Homelab"  # `project: {uuid}`
    assert old[0].project == "Baking"  # `project_uuid`


def test_claude_assistant_text_summarises_tools_and_leaves_thinking_out(fixtures: Path, read_all) -> None:
    [chat], report = read_all(IMPORTER, fixtures / "claude" / "export-2025")
    text = chat.messages[1].text

    assert "[tool web_search: nginx proxy_pass subpath grafana]" in text
    assert "[tool result: Grafana docs: set root_url]" in text
    assert "proxy_pass http://localhost:3000/;" in text
    assert "SECRET-SCRATCH" not in text
    assert "ignored 1 content block of unknown type 'voice_note'" in report.notes


def test_claude_attachments_are_indexed_with_their_message_and_marked(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, fixtures / "claude" / "export-2025")
    text = chat.messages[0].text

    assert text.startswith("How do I proxy /grafana to port 3000?")
    assert "[attachment nginx.conf]\nserver {\n  listen 80;\n}" in text
    assert "[file diagram.png]" in text


def test_claude_older_export_without_content_blocks_uses_the_text_field(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "claude" / "export-2024")

    [chat] = conversations
    assert chat.messages[1].text == "Twice a day at room temperature, once a week if refrigerated."
    assert report.skipped[0].reason == "no messages"
    assert "0b1c2d3e-0000-4000-8000-000000000002" in report.skipped[0].where


def test_claude_zip_export_with_a_top_folder_reads_like_the_folder(fixtures: Path, read_all, zip_dir) -> None:
    archive = zip_dir(fixtures / "claude" / "export-2025", "data-2025-01-21/")

    [chat], _ = read_all(IMPORTER, archive)

    assert chat.id == "claude:8f1c0000-0000-4000-8000-000000000010"
    assert chat.project == "Homelab"


def test_claude_truncated_export_keeps_the_conversations_before_the_cut(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "claude" / "truncated" / "conversations.json")

    assert [c.title for c in conversations] == ["Complete one"]
    assert len(report.skipped) == 1
    assert "the conversations before it were imported" in report.skipped[0].reason


def test_claude_wrong_types_are_skipped_field_by_field_and_never_raise(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "claude" / "wrong-types" / "conversations.json")

    [chat] = conversations
    assert [m.text for m in chat.messages] == ["Plain question about zfs snapshots", "Use zfs snapshot pool@name."]
    assert chat.project == "loose-project-string"
    assert chat.title == "Plain question about zfs snapshots"
    assert chat.created_at == datetime(2024, 7, 1, 12, 0, tzinfo=UTC)
    reasons = sorted(skip.reason for skip in report.skipped)
    assert reasons == ["expected a conversation object, got str", "no messages", "no uuid"]


def test_claude_zip_without_conversations_is_a_clear_source_error(tmp_path: Path, read_all) -> None:
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("users.json", "[]")

    with pytest.raises(SourceError, match=r"holds no conversations.json"):
        read_all(IMPORTER, archive)


def test_claude_export_with_an_empty_list_is_a_clear_source_error(tmp_path: Path, read_all) -> None:
    (tmp_path / "conversations.json").write_text("[]")

    with pytest.raises(SourceError, match="holds no conversations"):
        read_all(IMPORTER, tmp_path)


def test_claude_detects_its_zip_folder_and_file_but_not_a_chatgpt_export(fixtures: Path, zip_dir) -> None:
    assert IMPORTER.detect(fixtures / "claude" / "export-2025")
    assert IMPORTER.detect(fixtures / "claude" / "export-2024" / "conversations.json")
    assert IMPORTER.detect(zip_dir(fixtures / "claude" / "export-2024"))
    assert not IMPORTER.detect(fixtures / "chatgpt" / "single")
    assert not IMPORTER.detect(fixtures / "aider" / ".aider.chat.history.md")
