from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from importers.gemini import GeminiImporter, default_locations

IMPORTER = GeminiImporter()
WEATHER_HASH = "ddd5c1271bba0899aa1da52d83260612eaf190303be48f820f2c891ffbfd9168"


def _session(fixtures: Path) -> Path:
    return fixtures / "gemini" / "tmp" / WEATHER_HASH / "chats" / "session-2025-04-02T10-00-9c1d2e3f.jsonl"


def test_gemini_rewind_drops_the_target_and_everything_after_it(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session(fixtures))

    texts = [m.text for m in chat.messages]
    assert all("REWOUND-AWAY" not in text for text in texts)
    assert texts[-2:] == ["Now Madrid please", "Madrid: 25C clear."]


def test_gemini_rewritten_records_replace_the_earlier_version_in_place(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session(fixtures))

    assert [(m.id, m.role) for m in chat.messages] == [
        ("g-2", "user"),
        ("g-3", "assistant"),
        ("g-3:tool0", "tool"),
        ("g-6", "user"),
        ("g-7", "assistant"),
    ]
    assert (
        chat.messages[1].text
        == "I'll call the weather API.\n\n[tool run_shell_command: curl -s wttr.in/Lisbon?format=3]"
    )
    assert chat.messages[2].text == "[tool result: Lisbon: 21C sunny]"


def test_gemini_status_lines_and_thoughts_are_left_out_unknown_types_counted(fixtures: Path, read_all) -> None:
    [chat], report = read_all(IMPORTER, _session(fixtures))
    texts = " ".join(m.text for m in chat.messages)

    assert "STATUS-NOISE" not in texts
    assert "HIDDEN-THOUGHT" not in texts
    assert "ignored 1 record of unknown type 'compression_marker'" in report.notes


def test_gemini_set_updates_title_and_times_and_ids_use_the_session_id(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session(fixtures))

    assert chat.id == "gemini:9c1d2e3f-0000-4000-8000-00000000abcd"
    assert chat.title == "Weather lookups"
    assert chat.created_at == datetime(2025, 4, 2, 10, 0, tzinfo=UTC)
    assert chat.updated_at == datetime(2025, 4, 2, 10, 2, 5, tzinfo=UTC)


def test_gemini_project_hash_is_resolved_to_the_folder_through_projects_json(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _session(fixtures))

    assert chat.project == "/home/ana/src/weather"


def test_gemini_legacy_json_session_imports_with_the_hash_as_project(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "gemini")
    legacy = next(c for c in conversations if c.id == "gemini:4d5e6f70-0000-4000-8000-000000000001")

    assert [m.text for m in legacy.messages] == [
        "Summarise the README of this repo",
        "It is a CLI for converting units.",
    ]
    assert legacy.project == "0f" * 32
    assert len(conversations) == 2


def test_gemini_migrated_legacy_file_is_not_imported_twice(fixtures: Path, tmp_path: Path, read_all) -> None:
    chats = tmp_path / "chats"
    shutil.copytree(_session(fixtures).parent, chats)
    legacy = chats / "session-2025-04-02T10-00-9c1d2e3f.json"
    legacy.write_text('{"sessionId": "9c1d2e3f-0000-4000-8000-00000000abcd", "projectHash": "x", "messages": []}')

    conversations, report = read_all(IMPORTER, chats)

    assert [c.id for c in conversations] == ["gemini:9c1d2e3f-0000-4000-8000-00000000abcd"]
    assert "superseded" in report.skipped[0].reason


def test_gemini_rewind_to_an_unknown_id_drops_everything_before_it(tmp_path: Path, read_all) -> None:
    session = tmp_path / "session-x.jsonl"
    session.write_text(
        '{"sessionId":"s","projectHash":"h","startTime":"2025-01-01T00:00:00Z"}\n'
        '{"id":"1","type":"user","content":"gone"}\n'
        '{"$rewindTo":"nope"}\n'
        '{"id":"2","type":"user","content":"kept"}\n'
    )

    [chat], _ = read_all(IMPORTER, session)

    assert [m.text for m in chat.messages] == ["kept"]


def test_gemini_home_and_chats_folder_are_detected(fixtures: Path) -> None:
    assert IMPORTER.detect(fixtures / "gemini")
    assert IMPORTER.detect(_session(fixtures).parent)
    assert IMPORTER.detect(_session(fixtures))
    assert not IMPORTER.detect(fixtures / "codex")


def test_gemini_default_location_honours_gemini_cli_home() -> None:
    home = Path("/home/ana")

    assert default_locations({}, home) == [home / ".gemini" / "tmp"]
    assert default_locations({"GEMINI_CLI_HOME": "/data/g"}, home) == [Path("/data/g/.gemini/tmp")]
