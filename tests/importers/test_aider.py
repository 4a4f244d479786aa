from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from importers.aider import HISTORY_FILE, AiderImporter, default_locations

IMPORTER = AiderImporter(tz=UTC)


@pytest.fixture
def repo(fixtures: Path, tmp_path: Path) -> Path:
    shutil.copy(fixtures / "aider" / HISTORY_FILE, tmp_path / HISTORY_FILE)
    return tmp_path


def test_aider_each_session_is_a_conversation_and_empty_ones_are_skipped(repo: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, repo)

    assert [c.created_at for c in conversations] == [
        datetime(2024, 8, 12, 14, 3, 27, tzinfo=UTC),
        datetime(2024, 8, 14, 18, 30, 5, tzinfo=UTC),
    ]
    assert [(s.where, s.reason) for s in report.skipped] == [
        (f"{HISTORY_FILE}, session at 2024-08-13 09:00:00", "no messages")
    ]


def test_aider_ids_hash_the_file_path_and_the_session_start(repo: Path, read_all) -> None:
    first, _ = read_all(IMPORTER, repo)
    again, _ = read_all(IMPORTER, repo / HISTORY_FILE)

    assert first[0].id == again[0].id
    assert first[0].id.startswith("aider:")
    assert first[0].id.endswith(":2024-08-12T14:03:27")
    assert first[0].project == str(repo.resolve())
    assert first[0].url == (repo / HISTORY_FILE).resolve().as_uri()
    assert [m.id for m in first[0].messages] == [m.id for m in again[0].messages]


def test_aider_user_lines_tool_output_and_assistant_text_are_told_apart(repo: Path, read_all) -> None:
    [chat, _], _ = read_all(IMPORTER, repo)

    assert [m.role for m in chat.messages] == ["tool", "user", "assistant", "tool", "user", "assistant"]
    assert chat.messages[1].text == "add a --dry-run flag to the deploy script\nit should print the commands instead"
    assert chat.title == "add a --dry-run flag to the deploy script it should print the commands instead"
    assert "> not a tool line, it is inside a code block" in chat.messages[2].text
    assert chat.messages[3].text.startswith("[tool result: Applied edit to deploy.py")
    assert chat.messages[5].text == "You're welcome."


def test_aider_local_start_times_are_converted_to_utc(repo: Path, read_all) -> None:
    lisbon_summer = timezone(timedelta(hours=1))

    conversations, _ = read_all(AiderImporter(tz=lisbon_summer), repo)

    assert conversations[0].created_at == datetime(2024, 8, 12, 13, 3, 27, tzinfo=UTC)


def test_aider_sessions_end_when_they_start_as_the_file_holds_no_other_time(repo: Path, read_all) -> None:
    first, last = read_all(IMPORTER, repo)[0]

    assert first.updated_at == first.created_at
    assert last.updated_at == last.created_at


def test_aider_default_locations_name_the_configured_history_file() -> None:
    home = Path("/home/ana")

    assert default_locations({}, home) == [home / HISTORY_FILE]
    assert default_locations({"AIDER_CHAT_HISTORY_FILE": "/w/h.md"}, home) == [Path("/w/h.md"), home / HISTORY_FILE]


def test_aider_detects_the_history_file_and_its_repository(repo: Path) -> None:
    assert IMPORTER.detect(repo)
    assert IMPORTER.detect(repo / HISTORY_FILE)
    assert not IMPORTER.detect(repo.parent)
