"""Mistral Vibe: session folders of 2.x (the current one, 2.12's compaction summary, 2.0's local times
and a 1.x session Vibe 2.0 moved into a folder), the single files of 1.x, and broken ones."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.mistral_vibe import MistralVibeImporter
from importers.sources.archive import Archive
from importers.sources.reindex import Reindexer
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

CURRENT = "mistral-vibe/logs/session"
HEALTH = "mistral-vibe:session_20260612_091500_3f2a9c41"
AFTER_COMPACTION = "mistral-vibe:session_20260612_102000_9d8c7b6a"


def test_mistral_vibe_sessions_read_as_the_user_and_vibe_wrote_them(fixtures: Path, read_all) -> None:
    conversations, report = read_all(MistralVibeImporter(), fixtures / CURRENT)
    chats = {c.id: c for c in conversations}
    health = chats[HEALTH]

    assert health.title == "Health endpoint 500"  # the user's /rename
    assert health.project == "/home/lea/src/inventory"
    assert (health.created_at, health.updated_at) == (
        datetime(2026, 6, 12, 9, 15, 0, 412345, tzinfo=UTC),
        datetime(2026, 6, 12, 9, 21, 40, 100000, tzinfo=UTC),
    )
    assert [(m.role, m.text) for m in health.messages] == [
        ("user", "the /health endpoint returns 500 since the pool change"),
        ("assistant", "Let me look at the handler.\n\n[tool bash: grep -n pool api/health.py]"),
        ("tool", "[tool result: command: grep -n pool api/health.py stdout: 12: conn = pool.get() returncode: 0]"),
        (
            "assistant",
            "`pool.get()` now raises when the pool is closed; the handler must use `async with pool.acquire()`.",
        ),
        ("user", "here is the trace\n\n[image trace.png]"),
        ("assistant", "[tool search_replace: api/health.py]"),
        ("tool", "[tool error: search_replace failed: no match for the SEARCH block]"),
        ("assistant", "Fixed: the handler now acquires a connection per request."),
    ]
    text = " ".join(m.text for m in health.messages)
    for left_out in ("read api/health.py before guessing", "Plan mode has ended", "Explore api/", "Two uses"):
        assert left_out not in text  # reasoning, Vibe's reminder, the subagent's trace

    # After a compaction Vibe starts a session of its own; what it carries over is not said again.
    assert [(m.role, m.text) for m in chats[AFTER_COMPACTION].messages] == [
        ("user", "now add a test for the closed pool"),
        ("assistant", "Added `test_health_when_pool_closed` to tests/test_health.py."),
    ]

    docs = chats["mistral-vibe:session_20260613_090000_1b2c3d4e"]  # its last line cut mid-write
    assert [m.role for m in docs.messages] == ["user", "assistant"]
    unnamed = chats["mistral-vibe:session_20260613_100000_2c3d4e5f"]  # its meta.json cut mid-write
    assert (unnamed.title, unnamed.project) == ("rename the env var to INVENTORY_DSN", None)

    assert len(chats) == 4
    assert [(s.where, s.reason) for s in report.skipped] == [
        ("session_20260613_080000_0a0b0c0d/messages.jsonl", "no messages")  # Vibe's own notice alone
    ]
    assert any("cut off mid-write" in note for note in report.notes)
    assert any("no readable meta.json" in note for note in report.notes)


def test_mistral_vibe_before_injected_marks_leaves_its_summaries_and_notices_out(fixtures: Path, read_all) -> None:
    conversations, report = read_all(MistralVibeImporter(), fixtures / "mistral-vibe-2.12")
    (cli,) = conversations
    assert [(m.role, m.text) for m in cli.messages] == [
        ("user", "migrate the CLI from argparse to click"),
        ("assistant", "Converting `export` now.\n\n[tool read_file: cli/export.py]"),
        ("tool", "[tool result: path: cli/export.py content: import argparse]"),
        ("assistant", "Done: every subcommand is a click command now."),
    ]
    assert report.skipped == []

    conversations, report = read_all(MistralVibeImporter(), fixtures / "mistral-vibe-2.0")
    chats = {c.id: c for c in conversations}
    hook = chats["mistral-vibe:session_20260129_165200_6f7a8b9c"]
    assert [(m.role, m.text) for m in hook.messages] == [
        ("user", "write a pre-commit hook that runs ruff"),
        ("assistant", "Here is `.pre-commit-config.yaml` with ruff and ruff-format."),
        ("user", "pin it to 0.9.1"),
        ("assistant", "Pinned `rev: v0.9.1`."),
    ]
    assert hook.project == "/home/lea/dotfiles"
    moved = chats["mistral-vibe:session_20251210_110000_7a8b9c0d"]  # a 1.x session 2.0 moved: no system prompt
    assert [m.role for m in moved.messages] == ["user", "assistant"]
    assert moved.title == "list the flaky tests in CI"


def test_mistral_vibe_1_sessions_are_one_file_each(fixtures: Path, read_all) -> None:
    conversations, report = read_all(MistralVibeImporter(), fixtures / "mistral-vibe-1.3")
    chats = {c.id: c for c in conversations}
    scraper = chats["mistral-vibe:session_20251215_143000_9a8b7c6d"]
    assert scraper.project == "/home/lea/src/scraper"
    assert [m.role for m in scraper.messages] == ["user", "assistant", "tool", "assistant"]
    assert "expert coding" not in " ".join(m.text for m in scraper.messages)
    # After /compact 1.x began again with the summary and the last request: not what the user said.
    assert [(m.role, m.text) for m in chats["mistral-vibe:session_20251215_150000_0b1c2d3e"].messages] == [
        ("user", "also retry on 429"),
        ("assistant", "Added a retry with backoff on 429 responses."),
    ]
    assert len(chats) == 2
    assert [Path(s.where).name for s in report.skipped] == ["session_20251216_090000_1c2d3e4f.json"]


def test_mistral_vibe_is_found_in_its_home_and_detected_by_its_folders(fixtures: Path, tmp_path: Path) -> None:
    importer = MistralVibeImporter()
    for platform in ("linux", "darwin", "win32"):
        assert importer.default_locations({}, tmp_path, platform) == [tmp_path / ".vibe/logs/session"]
    assert importer.default_locations({"VIBE_HOME": "~/tools/vibe"}, tmp_path) == [tmp_path / "tools/vibe/logs/session"]
    # Moved by Vibe's own setting, the variable first: the default folder keeps the sessions from before.
    (tmp_path / ".vibe").mkdir()
    config = 'active_model = "devstral-2"\n\n[session_logging]\nsave_dir = "~/logs/vibe"\n'
    (tmp_path / ".vibe/config.toml").write_text(config)
    assert importer.default_locations({}, tmp_path) == [tmp_path / "logs/vibe", tmp_path / ".vibe/logs/session"]
    moved = {"VIBE_SESSION_LOGGING__SAVE_DIR": "/data/vibe"}
    assert importer.default_locations(moved, tmp_path) == [Path("/data/vibe"), tmp_path / ".vibe/logs/session"]
    (tmp_path / ".vibe/config.toml").write_text("[session_logging\n")  # broken: Vibe's default
    assert importer.default_locations({}, tmp_path) == [tmp_path / ".vibe/logs/session"]
    session = fixtures / CURRENT / "session_20260612_091500_3f2a9c41"
    for path in (fixtures / "mistral-vibe", fixtures / CURRENT, session / "messages.jsonl"):
        assert registry.detect(path).name == "mistral-vibe"
    assert registry.detect(fixtures / "mistral-vibe-1.3/logs/session/session_20251215_143000_9a8b7c6d.json").name == (
        "mistral-vibe"
    )
    assert not importer.detect(next(session.glob("agents/*/messages.jsonl")))  # a subagent's trace
    assert importer.context_files(session / "messages.jsonl") == [session / "meta.json"]


def test_sync_reads_an_appended_vibe_session_again_and_reindex_gives_it_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(Path(__file__).parents[1] / "fixtures/importers/mistral-vibe/logs", home / ".vibe/logs")
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        first = Syncer(library, env={}, home=home, formats=["mistral-vibe"]).run_once()
        assert first.files_new == 5
        assert [skip.reason for skip in first.files_failed] == ["no messages"]  # Vibe's own notice alone
        assert Syncer(library, env={}, home=home, formats=["mistral-vibe"]).run_once().files_unchanged == 5

        messages = home / ".vibe/logs/session/session_20260612_102000_9d8c7b6a/messages.jsonl"
        with messages.open("a", encoding="utf-8") as log:  # Vibe appends the turn's new messages
            log.write(json.dumps({"role": "user", "content": "run it", "injected": False, "message_id": "d4"}) + "\n")
        again = Syncer(library, env={}, home=home, formats=["mistral-vibe"]).run_once()
        assert (again.files_grown, again.files_unchanged, again.conversations_updated) == (1, 4, 1)
        assert library.get(AFTER_COMPACTION).messages[-1].text == "run it"

        before = {c.id: (c.title, c.project, len(c.messages)) for c in library.iter_conversations()}
        archive = Archive(library.home)
        assert archive.path(archive.relative_for("mistral-vibe", messages.parent / "meta.json")).is_file()
        shutil.rmtree(home)
        library.delete(list(before))
        assert Reindexer(library, home=home).run().files_failed == []
        assert {c.id: (c.title, c.project, len(c.messages)) for c in library.iter_conversations()} == before
    finally:
        library.close()
