"""Aider 0.86 with reasoning models: the thinking aider writes into each reply, and the confirmations it
answers by itself after "(S)kip all", as aider's own writer (aider/io.py, base_coder.py) logs them."""

from __future__ import annotations

import shutil
from datetime import UTC
from pathlib import Path

from importers.aider import HISTORY_FILE, AiderImporter

IMPORTER = AiderImporter(tz=UTC)


def _repo(fixtures: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "retry"
    repo.mkdir()
    shutil.copy(fixtures / "aider-0.86" / HISTORY_FILE, repo / HISTORY_FILE)
    return repo


def test_aider_reasoning_blocks_are_not_part_of_the_reply(fixtures: Path, tmp_path: Path, import_fixture) -> None:
    imported = import_fixture(_repo(fixtures, tmp_path), importer=IMPORTER)
    first, second = imported.conversations

    replies = [m.text for c in imported.conversations for m in c.messages if m.role == "assistant"]
    assert not [r for r in replies if "thinking-content" in r or "<think>" in r or "wall-clock time. I should" in r]
    assert replies[0].startswith("The test depends on wall-clock time.")
    assert second.messages[-1].text == (
        "MAX_DELAY in src/backoff.py caps it; it matches the gateway's 30 second timeout."
    )
    assert imported.found("loaded runner") == []  # the reasoning is not searchable
    assert first.messages[-1].text == "[tool result: ^C KeyboardInterrupt]"  # interrupted while thinking


def test_aider_confirmations_it_answered_itself_are_not_user_turns(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    first = import_fixture(_repo(fixtures, tmp_path), importer=IMPORTER).conversations[0]

    assert [m.text for m in first.messages if m.role == "user"] == [
        "the retry test is flaky on CI, find out why",
        "/add src/retry.py tests/test_retry.py",
        "use a fake clock in the test",
        "and the jitter too?",
    ]
    skips = [m.text for m in first.messages if m.role == "tool" and "Add file to the chat" in m.text]
    assert len(skips) == 3  # aider's own line for each, kept as what aider did
    assert first.title == "the retry test is flaky on CI, find out why"
