"""Behaviour every importer shares: huge messages, bad bytes, stable ids, sane times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from importers import registry
from importers.aider import AiderImporter
from importers.chatgpt import ChatGPTImporter
from importers.claude import ClaudeImporter
from importers.claude_code import ClaudeCodeImporter
from importers.codex import CodexImporter

ALL_FIXTURE_SOURCES = [
    "claude/export-2024",
    "claude/export-2025",
    "claude/wrong-types/conversations.json",
    "chatgpt/single",
    "chatgpt/sharded",
    "claude-code/projects",
    "codex",
    "gemini",
]


@pytest.mark.parametrize("relative", ALL_FIXTURE_SOURCES)
def test_every_import_has_contiguous_indexes_unique_ids_and_ordered_utc_times(fixtures: Path, relative: str) -> None:
    conversations, _ = registry.read(fixtures / relative)
    conversations = list(conversations)

    assert conversations
    for chat in conversations:
        assert [m.index for m in chat.messages] == list(range(len(chat.messages)))
        assert len({m.id for m in chat.messages}) == len(chat.messages)
        assert chat.created_at.utcoffset() is not None
        assert chat.created_at.utcoffset().total_seconds() == 0
        assert chat.updated_at >= chat.created_at
        assert chat.id.startswith(f"{chat.source}:")


@pytest.mark.parametrize("relative", ALL_FIXTURE_SOURCES)
def test_reimporting_gives_identical_conversations(fixtures: Path, relative: str) -> None:
    first, _ = registry.read(fixtures / relative)
    second, _ = registry.read(fixtures / relative)

    assert [c.fingerprint() for c in first] == [c.fingerprint() for c in second]


def test_a_20_mb_message_is_imported_whole(tmp_path: Path, read_all) -> None:
    huge = "word " * (4 * 1024 * 1024)  # 20 MiB
    record = {
        "type": "user",
        "sessionId": "big",
        "parentUuid": None,
        "uuid": "u-big",
        "cwd": "/p",
        "timestamp": "2025-01-01T00:00:00Z",
        "message": {"role": "user", "content": huge},
    }
    session = tmp_path / "big.jsonl"
    session.write_text(json.dumps(record) + "\n")

    [chat], _ = read_all(ClaudeCodeImporter(), session)

    assert chat.messages[0].text == huge
    assert chat.title.startswith("word word")
    assert len(chat.title) <= 80


def test_non_utf8_bytes_are_replaced_not_fatal_in_jsonl(tmp_path: Path, read_all) -> None:
    session = tmp_path / "rollout-2025-01-01T00-00-00-0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
    meta = b'{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/p"}}\n'
    item = (
        b'{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message",'
        b'"role":"user","content":[{"type":"input_text","text":"caf\xe9 \xff bytes"}]}}\n'
    )
    session.write_bytes(meta + item)

    [chat], _ = read_all(CodexImporter(), session)

    assert chat.messages[0].text == "caf\ufffd \ufffd bytes"


def test_non_utf8_bytes_are_replaced_in_exports_and_markdown(tmp_path: Path, read_all) -> None:
    export = tmp_path / "conversations.json"
    export.write_bytes(
        b'[{"uuid": "u1", "account": {"uuid": "a"}, "chat_messages": ['
        b'{"uuid": "m1", "sender": "human", "text": "na\xefve \xc3"}]}]'
    )
    history = tmp_path / ".aider.chat.history.md"
    history.write_bytes(b"# aider chat started at 2024-01-01 10:00:00\n\n#### r\xe9sum\xe9\n\nok\n")

    [claude], _ = read_all(ClaudeImporter(), export)
    [aider], _ = read_all(AiderImporter(), history)

    assert claude.messages[0].text == "na\ufffdve \ufffd"
    assert aider.messages[0].text == "r\ufffdsum\ufffd"


def test_lone_surrogate_escapes_become_replacement_characters(tmp_path: Path, read_all) -> None:
    export = tmp_path / "conversations.json"
    message = {"id": "m", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["bad \ud800 half"]}}
    export.write_text(
        json.dumps(
            [
                {
                    "id": "c",
                    "current_node": "m",
                    "create_time": 1.7e9,
                    "mapping": {"m": {"id": "m", "parent": None, "children": [], "message": message}},
                }
            ]
        )
    )

    [chat], _ = read_all(ChatGPTImporter(), export)

    chat.messages[0].text.encode("utf-8")  # does not raise
    assert chat.messages[0].text.startswith("bad ")
    assert chat.messages[0].text.endswith(" half")


def test_broken_lines_in_the_middle_of_a_jsonl_are_counted_and_skipped(tmp_path: Path, read_all) -> None:
    good = {
        "type": "user",
        "sessionId": "s",
        "parentUuid": None,
        "uuid": "u1",
        "cwd": "/p",
        "message": {"role": "user", "content": "still here"},
    }
    session = tmp_path / "s.jsonl"
    session.write_text("{broken\n" + json.dumps(good) + "\n[1, 2\n")

    [chat], report = read_all(ClaudeCodeImporter(), session)

    assert [m.text for m in chat.messages] == ["still here"]
    assert any("2 unreadable line(s)" in note for note in report.notes)


def test_absurdly_nested_json_is_reported_not_raised(tmp_path: Path, read_all) -> None:
    good = {"uuid": "u1", "account": {"uuid": "a"}, "chat_messages": [{"uuid": "m", "sender": "human", "text": "ok"}]}
    export = tmp_path / "conversations.json"
    export.write_text("[" + json.dumps(good) + "," + "[" * 200_000 + "]" * 200_000 + "]")
    session = tmp_path / "s.jsonl"
    record = {"type": "user", "sessionId": "s", "parentUuid": None, "uuid": "u", "message": {"content": "fine"}}
    session.write_text("[" * 200_000 + "\n" + json.dumps(record) + "\n")

    [claude], claude_report = read_all(ClaudeImporter(), export)
    [code], code_report = read_all(ClaudeCodeImporter(), session)

    assert claude.messages[0].text == "ok"
    assert "nested too deeply" in claude_report.skipped[0].reason
    assert code.messages[0].text == "fine"
    assert any("1 unreadable line" in note for note in code_report.notes)
