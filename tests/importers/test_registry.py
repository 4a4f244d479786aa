from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from importers import registry
from importers.base import SourceError

GEMINI_SESSION = (
    "gemini/tmp/ddd5c1271bba0899aa1da52d83260612eaf190303be48f820f2c891ffbfd9168/chats/"
    "session-2025-04-02T10-00-9c1d2e3f.jsonl"
)


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("claude/export-2025", "claude"),
        ("claude/export-2024/conversations.json", "claude"),
        ("chatgpt/single", "chatgpt"),
        ("chatgpt/single/conversations.json", "chatgpt"),
        ("chatgpt/sharded", "chatgpt"),
        ("claude-code/projects", "claude-code"),
        ("claude-code/projects/-home-ana-src-shop", "claude-code"),
        ("claude-code/projects/-home-ana-src-shop/5e55e000-1111-4000-8000-000000000001.jsonl", "claude-code"),
        ("codex", "codex"),
        ("codex/sessions", "codex"),
        ("codex/archived_sessions/rollout-2025-01-05T14-30-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl", "codex"),
        ("gemini", "gemini"),
        ("gemini/tmp", "gemini"),
        (GEMINI_SESSION, "gemini"),
        (GEMINI_SESSION.rsplit("/", 1)[0], "gemini"),
        (
            "gemini/tmp/0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f/chats/"
            "session-2024-11-20T08-15-4d5e6f70.json",
            "gemini",
        ),
        ("aider", "aider"),
        ("aider/.aider.chat.history.md", "aider"),
        ("pi/sessions", "pi"),
        ("kimi-cli/.kimi", "kimi-cli"),
        ("kimi-cli/.kimi/sessions", "kimi-cli"),
        ("openhands/.openhands", "openhands"),
        ("kimi-code/.kimi-code", "kimi-code"),
        ("openhands/.openhands/conversations", "openhands"),
        ("openhands/.openhands/sessions", "openhands-v0"),
        ("openhands/.openhands/sessions/7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7", "openhands-v0"),
    ],
)
def test_registry_detects_each_format_from_its_file_or_folder(fixtures: Path, relative: str, expected: str) -> None:
    assert registry.detect(fixtures / relative).name == expected


@pytest.mark.parametrize(("folder", "expected"), [("claude/export-2024", "claude"), ("chatgpt/sharded", "chatgpt")])
def test_registry_detects_exports_inside_zips(fixtures: Path, zip_dir, folder: str, expected: str) -> None:
    assert registry.detect(zip_dir(fixtures / folder, "export/")).name == expected


def test_registry_detects_cursor_databases_and_user_folders(cursor_user_dir: Path) -> None:
    assert registry.detect(cursor_user_dir).name == "cursor"
    assert registry.detect(cursor_user_dir / "globalStorage" / "state.vscdb").name == "cursor"
    assert registry.detect(cursor_user_dir / "workspaceStorage").name == "cursor"


def test_registry_still_sends_plain_files_to_the_plain_importer(tmp_path: Path) -> None:
    plain = tmp_path / "chats.jsonl"
    plain.write_text(json.dumps({"id": "c-1", "messages": [{"role": "user", "text": "hi"}]}) + "\n")

    assert registry.detect(plain).name == "plain"


def test_registry_rejects_a_zip_with_nothing_it_knows(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("cat.jpg", b"\xff\xd8")

    with pytest.raises(SourceError, match="cannot tell what kind of chat history"):
        registry.detect(archive)


def test_registry_lists_every_format_with_plain_last() -> None:
    assert registry.names() == [
        "claude", "chatgpt",
        "opencode", "opencode-files", "qwen-code", "continue", "crush", "goose", "goose-files", "zed",
        "amazon-q", "kiro-cli", "pi", "kimi-cli", "kimi-code", "openhands", "openhands-v0",
        "claude-code", "codex", "gemini", "aider",
        "copilot-chat", "cline", "roo-code", "kilo-code", "cursor-agent", "cursor",
        "plain",
    ]  # fmt: skip


def test_conversation_with_the_opt_out_marker_is_skipped_by_every_importer(fixtures: Path, tmp_path: Path) -> None:
    export = tmp_path / "export"
    shutil.copytree(fixtures / "claude" / "export-2024", export)
    data = json.loads((export / "conversations.json").read_text())
    data[0]["chat_messages"][0]["text"] += "\n  pastchats: do-not-index\n"
    (export / "conversations.json").write_text(json.dumps(data))
    session = tmp_path / "cc" / "s.jsonl"
    session.parent.mkdir()
    session.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s",
                "parentUuid": None,
                "uuid": "u",
                "cwd": "/p",
                "message": {"role": "user", "content": "secret\npastchats: do-not-index"},
            }
        )
        + "\n"
    )

    for path in (export, session):
        conversations, report = registry.read(path)
        assert list(conversations) == []
        assert "opt-out marker" in [skip.reason for skip in report.skipped]


def test_marker_inside_a_sentence_does_not_opt_out(tmp_path: Path) -> None:
    plain = tmp_path / "chats.jsonl"
    text = "how would I add a line like pastchats: do-not-index to a chat?"
    plain.write_text(json.dumps({"id": "c-1", "messages": [{"role": "user", "text": text}]}) + "\n")

    conversations, report = registry.read(plain)

    assert [c.id for c in conversations] == ["c-1"]
    assert report.skipped == []


def test_a_source_that_gives_no_chats_and_no_reason_is_said_to_be_empty(tmp_path: Path) -> None:
    empty = tmp_path / "chats.jsonl"
    empty.write_text(json.dumps({"conversations": []}) + "\n", encoding="utf-8")

    conversations, report = registry.read(empty, "plain")

    assert list(conversations) == []
    assert report.notes == ["chats.jsonl holds no plain conversations: nothing in it could be read as one"]
