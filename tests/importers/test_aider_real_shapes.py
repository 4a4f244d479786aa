"""Aider histories in the shapes aider's own writer (aider/io.py) produces, broken ones included."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers.aider import HISTORY_FILE, AiderImporter

IMPORTER = AiderImporter(tz=UTC)
SESSION_ONE = datetime(2025, 3, 2, 10, 15, 0, tzinfo=UTC)
SESSION_TWO = datetime(2025, 3, 4, 8, 5, 41, tzinfo=UTC)
FAR_FUTURE = datetime(2031, 1, 1, tzinfo=UTC).timestamp()


def _repo(fixtures: Path, tmp_path: Path, variant: str) -> Path:
    repo = tmp_path / "ratelimit"
    repo.mkdir()
    shutil.copy(fixtures / "aider" / variant / HISTORY_FILE, repo / HISTORY_FILE)
    os.utime(repo / HISTORY_FILE, (FAR_FUTURE, FAR_FUTURE))  # the file's mtime must not become a chat time
    return repo


EXPECTED_ROLES = [
    "tool", "user", "tool", "user", "assistant", "tool", "user", "tool", "assistant",
    "user", "assistant", "tool", "user", "tool", "user", "assistant",
]  # fmt: skip


def test_aider_a_reply_interrupted_inside_a_fence_does_not_swallow_the_prompts_after_it(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    repo = _repo(fixtures, tmp_path, "interrupted")

    imported = import_fixture(repo, importer=IMPORTER)
    first, second = imported.conversations

    assert [m.role for m in first.messages] == EXPECTED_ROLES
    prompts = [m.text for m in first.messages if m.role == "user"]
    assert prompts == [
        "/add ratelimit.py",
        "make the token bucket refill lazily on each call\nkeep the public API unchanged",
        "now write a test for the burst case",
        "the burst test should use a fake clock so it is deterministic",
        "/run pytest -q",
        "thanks, that's all",
    ]
    interrupted = first.messages[8]
    assert interrupted.text.endswith("bucket = TokenBucket(capacity=5)")
    assert first.messages[7].text == "[tool result: ^C again to exit]"
    assert first.title == "/add ratelimit.py"
    assert [m.role for m in second.messages] == ["tool", "user", "assistant"]
    assert imported.found("fake clock deterministic") == [first.id]


def test_aider_replace_markers_and_headings_inside_replies_stay_with_the_reply(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    repo = _repo(fixtures, tmp_path, "interrupted")

    first = import_fixture(repo, importer=IMPORTER).conversations[0]

    reply = first.messages[4]
    assert reply.role == "assistant"
    assert reply.text.startswith("#### Step 1: remember the last refill")
    assert ">>>>>>> REPLACE" in reply.text
    assert reply.text.endswith("> Note: the bucket never holds more than its capacity.")
    assert not [m for m in first.messages if m.role == "tool" and "REPLACE" in m.text]


def test_aider_session_times_come_from_the_headers_not_the_file(fixtures: Path, tmp_path: Path, import_fixture) -> None:
    repo = _repo(fixtures, tmp_path, "interrupted")

    first, second = import_fixture(repo, importer=IMPORTER).conversations

    assert (first.created_at, first.updated_at) == (SESSION_ONE, SESSION_ONE)
    assert (second.created_at, second.updated_at) == (SESSION_TWO, SESSION_TWO)
    assert first.project == second.project == str(repo.resolve())


def test_aider_a_history_stripped_of_its_hard_breaks_still_keeps_every_prompt(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    repo = _repo(fixtures, tmp_path, "stripped")

    first, _ = import_fixture(repo, importer=IMPORTER).conversations

    assert [m.role for m in first.messages] == EXPECTED_ROLES
    assert sum(m.role == "user" for m in first.messages) == 6
    assert not [m for m in first.messages if m.role == "tool" and "REPLACE" in m.text]


@pytest.mark.parametrize("variant", ["interrupted", "stripped"])
def test_aider_import_summary_names_both_sessions(variant: str, fixtures: Path, tmp_path: Path, import_fixture) -> None:
    repo = _repo(fixtures, tmp_path, variant)

    imported = import_fixture(repo, importer=IMPORTER)

    assert "2 new" in imported.summary
    assert "skipped" in imported.summary  # the counts line always names skips, here none


def test_aider_architect_hand_offs_to_the_editor_are_not_the_users_turns(fixtures: Path, import_fixture) -> None:
    # Aider 0.86.2 in architect mode logs the architect's answer again as the editor model's prompt.
    imported = import_fixture(fixtures / "aider-architect" / HISTORY_FILE, importer=IMPORTER)

    [chat] = imported.conversations
    assert [m.text for m in chat.messages if m.role == "user"] == [
        "/add fetch.py",
        "make retries back off exponentially",
        "and log each retry",
    ]
    assert [m.role for m in chat.messages].count("assistant") == 4  # each answer, and each edit
