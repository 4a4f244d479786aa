"""Readers stream and salvage: a cut file keeps its complete records, depth is a per-record error,
bad bytes cost nothing, and only regular files are ever opened."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from importers import registry
from importers.base import SourceError
from importers.chatgpt import ChatGPTImporter
from importers.claude_code import ClaudeCodeImporter
from importers.plain import PlainImporter


def plain_chat(i: int) -> dict[str, object]:
    return {"id": f"c{i}", "title": f"chat {i}", "messages": [{"role": "user", "text": f"question {i}"}]}


def test_a_truncated_pretty_printed_plain_file_keeps_every_complete_conversation(tmp_path: Path, read_all) -> None:
    text = json.dumps({"conversations": [plain_chat(i) for i in range(7)]}, indent=2)
    cut = text[: text.index('"c6"') + 2]  # the seventh conversation is cut off mid-record
    source = tmp_path / "chats.json"
    source.write_text(cut)

    conversations, report = read_all(PlainImporter(), source)

    assert [c.id for c in conversations] == [f"c{i}" for i in range(6)]
    assert len(report.skipped) == 1
    assert "the conversations before it were read" in report.skipped[0].reason


def test_plain_json_nested_200k_deep_is_one_record_error_and_the_others_are_read(tmp_path: Path, read_all) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    source = tmp_path / "chats.json"
    first, last = json.dumps(plain_chat(1)), json.dumps(plain_chat(2))
    source.write_text(f'{{"conversations": [\n{first},\n{{"id": "deep", "messages": {deep}}},\n{last}\n]}}')

    conversations, report = read_all(PlainImporter(), source)

    assert [c.id for c in conversations] == ["c1", "c2"]
    assert [skip.reason for skip in report.skipped] == ["nested too deeply to read (more than 200 levels)"]


def test_plain_json_lines_nested_200k_deep_loses_only_that_line(tmp_path: Path, read_all) -> None:
    source = tmp_path / "chats.jsonl"
    lines = [json.dumps(plain_chat(1)), "[" * 200_000 + "]" * 200_000, json.dumps(plain_chat(2))]
    source.write_text("\n".join(lines) + "\n")

    conversations, report = read_all(PlainImporter(), source)

    assert [c.id for c in conversations] == ["c1", "c2"]
    assert report.skipped[0].where.endswith("line 2")


def test_a_plain_document_on_one_huge_line_is_streamed(tmp_path: Path, read_all) -> None:
    source = tmp_path / "chats.json"
    source.write_text(json.dumps({"version": 1, "conversations": [plain_chat(i) for i in range(3)]}))

    conversations, _ = read_all(PlainImporter(), source)

    assert [c.id for c in conversations] == ["c0", "c1", "c2"]


def test_json_lines_whose_first_line_is_broken_keeps_the_rest(tmp_path: Path, read_all) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text('{"id": "broken", "messages": [\n' + json.dumps(plain_chat(1)) + "\n")

    conversations, report = read_all(PlainImporter(), source)

    assert [c.id for c in conversations] == ["c1"]
    assert "not valid JSON" in report.skipped[0].reason


def chatgpt_conversation(i: int, text: str = "hello") -> dict[str, object]:
    node = {"id": f"n{i}", "message": {"id": f"m{i}", "author": {"role": "user"}, "create_time": 1.7e9 + i,
            "content": {"content_type": "text", "parts": [text]}}, "parent": None, "children": []}  # fmt: skip
    return {"id": f"g{i}", "title": f"t{i}", "create_time": 1.7e9 + i, "update_time": 1.7e9 + i,
            "current_node": f"n{i}", "mapping": {f"n{i}": node}}  # fmt: skip


def test_a_zipped_export_with_a_cut_member_keeps_the_complete_conversations(tmp_path: Path, read_all) -> None:
    text = json.dumps([chatgpt_conversation(i) for i in range(4)], indent=1)
    source = tmp_path / "export.zip"
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", text[: text.index('"g3"')])

    conversations, report = read_all(ChatGPTImporter(), source)

    assert [c.id for c in conversations] == ["chatgpt:g0", "chatgpt:g1", "chatgpt:g2"]
    assert "the conversations before it were imported" in report.skipped[-1].reason


def test_bytes_that_are_not_utf8_and_a_bom_cost_nothing(tmp_path: Path, read_all) -> None:
    body = json.dumps([chatgpt_conversation(i, "caf\u00e9 ZZ") for i in range(3)]).encode()
    source = tmp_path / "conversations.json"
    source.write_bytes(b"\xef\xbb\xbf" + body.replace(b"ZZ", b"\xff\xfe"))

    conversations, report = read_all(ChatGPTImporter(), source)

    assert len(conversations) == 3
    assert conversations[0].messages[0].text == "café \ufffd\ufffd"
    assert not report.skipped


def test_a_number_too_large_for_a_float_does_not_stop_the_file(tmp_path: Path, read_all) -> None:
    chats = [chatgpt_conversation(i) for i in range(2)]
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(chats).replace('"title": "t0"', '"title": "t0", "weight": 1e400'))

    conversations, _ = read_all(ChatGPTImporter(), source)

    assert len(conversations) == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX feature")
def test_a_fifo_in_a_claude_code_folder_is_skipped_with_a_reason(tmp_path: Path, read_all, fixtures: Path) -> None:
    projects = tmp_path / "projects" / "-home-ana-src"
    projects.mkdir(parents=True)
    session = next((fixtures / "claude-code" / "projects").rglob("*.jsonl"))
    (projects / session.name).write_bytes(session.read_bytes())
    os.mkfifo(projects / "stuck.jsonl")  # nothing ever writes to it: opening it to read would block

    conversations, report = read_all(ClaudeCodeImporter(), tmp_path / "projects")

    assert len(conversations) == 1
    assert [(s.where.rsplit("/", 1)[-1], s.reason) for s in report.skipped] == [
        ("stuck.jsonl", "cannot read: not a regular file but a FIFO (named pipe)")
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX feature")
def test_importing_a_fifo_directly_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "conversations.json"
    os.mkfifo(fifo)

    with pytest.raises(SourceError, match="not a regular file but a FIFO"):
        registry.read(fifo)
    with pytest.raises(SourceError, match="not a regular file but a FIFO"):
        registry.read(fifo, "chatgpt")
