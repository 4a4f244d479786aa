from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers.base import SourceError
from importers.chatgpt import ChatGPTImporter

IMPORTER = ChatGPTImporter()


def test_chatgpt_import_follows_current_node_not_regenerated_branches(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "chatgpt" / "single")
    chat = conversations[0]

    assert chat.id == "chatgpt:67d3f000-aaaa-8000-9000-000000000001"
    assert [m.id for m in chat.messages] == ["n-u1", "n-code", "n-tool", "n-a2"]
    assert [m.index for m in chat.messages] == [0, 1, 2, 3]
    assert all("REGENERATED-AWAY" not in m.text for m in chat.messages)


def test_chatgpt_hidden_messages_and_thoughts_are_left_out(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "chatgpt" / "single")
    texts = " ".join(m.text for m in conversations[0].messages)

    assert "HIDDEN-THOUGHT" not in texts
    assert "Be brief" not in texts
    assert conversations[0].messages[0].role == "user"


def test_chatgpt_content_types_become_readable_text(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "chatgpt" / "single")
    by_id = {m.id: m for m in conversations[0].messages}

    assert by_id["n-code"].text == "print('lifetimes')"
    assert by_id["n-tool"].role == "tool"
    assert by_id["n-tool"].text.startswith("[tool python]")
    assert by_id["n-a2"].text == "The closure borrows `x` mutably.\n[image]\n[hologram_v9]"
    assert "ignored 1 message of unknown content type 'mystery_type'" in report.notes


def test_chatgpt_epoch_times_become_utc_and_link_points_at_chatgpt_com(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "chatgpt" / "single")
    chat = conversations[0]

    assert chat.created_at == datetime.fromtimestamp(1741942800.123, UTC)
    assert chat.updated_at == datetime.fromtimestamp(1741943100.5, UTC)
    assert chat.messages[0].created_at == datetime.fromtimestamp(1741942800.2, UTC)
    assert chat.url == "https://chatgpt.com/c/67d3f000-aaaa-8000-9000-000000000001"
    assert chat.project is None


def test_chatgpt_missing_times_fall_back_and_unknown_content_is_counted(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "chatgpt" / "single")
    no_times = conversations[1]

    assert no_times.title == "No times at all"
    assert [m.text for m in no_times.messages] == ["ping"]  # "pong" had an unknown content type
    assert no_times.project == "g-p-67abc-homelab"
    assert no_times.updated_at >= no_times.created_at
    assert any("modification time" in note for note in report.notes)


def test_chatgpt_empty_conversation_is_skipped_with_no_messages(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "chatgpt" / "single")

    assert len(conversations) == 2
    [skip] = report.skipped
    assert skip.reason == "no messages"
    assert "67d3f000-aaaa-8000-9000-000000000003" in skip.where


def test_chatgpt_sharded_export_reads_every_shard_in_order(fixtures: Path, read_all, zip_dir) -> None:
    from_dir, _ = read_all(IMPORTER, fixtures / "chatgpt" / "sharded")
    from_zip, _ = read_all(IMPORTER, zip_dir(fixtures / "chatgpt" / "sharded"))

    assert [c.id for c in from_dir] == ["chatgpt:shard-0-conv", "chatgpt:shard-1-conv"]
    assert from_zip == from_dir


def test_chatgpt_without_current_node_uses_the_newest_branch(tmp_path: Path, read_all) -> None:
    def node(key: str, parent: str | None, children: list[str], role: str, text: str, t: float) -> dict:
        content = {"content_type": "text", "parts": [text]}
        message = {"id": key, "author": {"role": role}, "create_time": t, "content": content}
        return {"id": key, "parent": parent, "children": children, "message": message}

    mapping = {
        "q": node("q", None, ["old", "new"], "user", "question", 1.7e9),
        "old": node("old", "q", [], "assistant", "old answer", 1.7e9 + 5),
        "new": node("new", "q", [], "assistant", "new answer", 1.7e9 + 50),
    }
    import json

    (tmp_path / "conversations.json").write_text(json.dumps([{"id": "c", "title": "t", "mapping": mapping}]))
    [chat], report = read_all(IMPORTER, tmp_path / "conversations.json")

    assert [m.text for m in chat.messages] == ["question", "new answer"]
    assert any("current_node" in note for note in report.notes)


def test_chatgpt_cycle_in_parents_does_not_hang(tmp_path: Path, read_all) -> None:
    import json

    mapping = {
        "a": {
            "id": "a",
            "parent": "b",
            "children": ["b"],
            "message": {
                "id": "a",
                "author": {"role": "user"},
                "content": {"content_type": "text", "parts": ["loop a"]},
                "create_time": 1.7e9,
            },
        },
        "b": {
            "id": "b",
            "parent": "a",
            "children": ["a"],
            "message": {
                "id": "b",
                "author": {"role": "assistant"},
                "content": {"content_type": "text", "parts": ["loop b"]},
                "create_time": 1.7e9,
            },
        },
    }
    (tmp_path / "conversations.json").write_text(json.dumps([{"id": "c", "current_node": "b", "mapping": mapping}]))

    [chat], _ = read_all(IMPORTER, tmp_path / "conversations.json")

    assert [m.text for m in chat.messages] == ["loop a", "loop b"]


def test_chatgpt_unparseable_file_is_a_source_error(tmp_path: Path, read_all) -> None:
    (tmp_path / "conversations.json").write_text('{"mapping": ')

    with pytest.raises(SourceError, match="not valid JSON"):
        read_all(IMPORTER, tmp_path / "conversations.json")


def test_chatgpt_detects_exports_but_not_claude_ones(fixtures: Path, zip_dir) -> None:
    assert IMPORTER.detect(fixtures / "chatgpt" / "single" / "conversations.json")
    assert IMPORTER.detect(fixtures / "chatgpt" / "sharded")
    assert IMPORTER.detect(zip_dir(fixtures / "chatgpt" / "single"))
    assert not IMPORTER.detect(fixtures / "claude" / "export-2025")
