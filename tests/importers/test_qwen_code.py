"""Qwen Code: sessions as Qwen Code 0.15 wrote them, and each record type and branch it writes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.qwen_code import QwenCodeImporter

REAL = "qwen-code/real-0.15/projects"  # written by `qwen -p` 0.15.10 against a local mock model
SHAPES = "qwen-code/shapes/projects"
WEATHER = "qwen-code:3f0c6b2e-5a1d-4c7e-9b8f-2d4e6a8c0b1d"


def test_qwen_code_reads_the_session_qwen_code_wrote(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / REAL)
    [chat] = imported.conversations

    assert chat.id == "qwen-code:7c67c8af-d544-4d32-8085-4c32662f0b74"
    assert (chat.source, chat.project) == ("qwen-code", "/tmp/qw2/home/src/weather")
    assert chat.title == "Where is the rate limiter implemented?"  # no title recorded: its first prompt
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert chat.messages[3].text == "[tool glob: *.md]"
    assert chat.messages[4].text.startswith('[tool result: Found 1 file(s) matching "*.md"')
    assert chat.created_at == datetime(2026, 11, 28, 10, 54, 24, 731000, tzinfo=UTC)
    assert imported.found("markdown") == [chat.id]


def test_qwen_code_follows_the_branch_a_rewind_left_and_merges_streamed_records(fixtures: Path, read_all) -> None:
    conversations, report = read_all(QwenCodeImporter(), fixtures / SHAPES)
    [chat] = conversations
    text = " ".join(m.text for m in chat.messages)

    assert chat.title == "Weather README: metric units"  # the last title recorded, /rename's
    assert chat.project == "/home/ana/src/weather"
    assert [m.role for m in chat.messages] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert chat.messages[1].text == (
        'I\'ll read the README first.\n\n[tool read_file: {"absolute_path": "/home/ana/src/weather/README.md"}]'
    )
    assert chat.messages[6].text == "[tool error: User denied the write]"
    assert "kelvin" not in text  # the rewound turn
    assert "300 K" not in text
    assert "wants metric" not in text  # a thought
    assert [(s.where.rsplit("/", 1)[-1], s.reason) for s in report.skipped] == [
        ("0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a.jsonl", "no messages")
    ]
    assert "ignored 1 record of unknown type 'checkpoint'" in report.notes
    assert any("cut off mid-write" in note for note in report.notes)


def test_qwen_code_files_are_not_taken_for_claude_code_transcripts(fixtures: Path) -> None:
    session = next((fixtures / REAL).rglob("*.jsonl"))

    assert registry.detect(session).name == "qwen-code"
    assert registry.detect(fixtures / "claude-code/projects").name == "claude-code"


def test_qwen_code_is_found_where_its_runtime_variables_point(tmp_path: Path) -> None:
    home = tmp_path / "home"
    importer = QwenCodeImporter()

    assert importer.default_locations({}, home) == [home / ".qwen/projects"]
    assert importer.default_locations({"QWEN_HOME": "~/q"}, home) == [home / "q/projects"]
    assert importer.default_locations({"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/run/q"}, home) == [
        Path("/run/q/projects")
    ]


def test_qwen_code_at_references_keep_only_what_the_user_typed(fixtures: Path, import_fixture) -> None:
    # The first prompt's `at_command` record keeps what was typed; the second has none, and the
    # files and folder listing the @path pulled in follow the typed part.
    imported = import_fixture(fixtures / "qwen-code/at-command/projects")

    [chat] = imported.conversations
    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "explain how @src/api.ts retries"),
        ("assistant", "It tries three times with no delay between attempts, swallowing every error."),
        ("user", "what else is in @src/"),
        ("assistant", "Besides api.ts there is cache.ts, an in-memory cache keyed by URL."),
    ]
    assert chat.title == "explain how @src/api.ts retries"
    assert imported.found("swallowing") == [chat.id]
    assert imported.found("fetch") == []  # the file's content is not the user's words
    assert imported.found("Showing") == []
