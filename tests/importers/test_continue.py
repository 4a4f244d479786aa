"""Continue: sessions the `cn` CLI 1.5 wrote, and the extensions' shapes (parts, tools, thinking, URIs)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers.continue_dev import ContinueImporter

REAL = "continue/real-cn-1.5/sessions"  # written by `cn -p` 1.5.47 against a local mock model
SHAPES = "continue/shapes/sessions"
SEARCH = "continue:6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
WINDOWS = "continue:7d2e3f4a-5b6c-4d7e-9f8a-0b1c2d3e4f5a"


def test_continue_reads_the_session_the_cli_wrote(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / REAL)
    [chat] = imported.conversations

    assert (chat.id, chat.source) == ("continue:eba3696b-32c5-4488-b3cd-ba45391e8ec5", "continue")
    assert chat.title == "Where is the rate limiter implemented?"  # "Untitled Session" is Continue's placeholder
    assert chat.project == "/tmp/cn/home/src/shop"
    assert chat.created_at == datetime(2026, 11, 28, 11, 2, 53, 678000, tzinfo=UTC)  # sessions.json's dateCreated
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant"]
    assert imported.found("sliding window") == [chat.id]


def test_continue_keeps_the_conversation_and_leaves_out_thinking_context_and_system(fixtures: Path, read_all) -> None:
    conversations, report = read_all(ContinueImporter(), fixtures / SHAPES)
    chats = {c.id: c for c in conversations}
    search = chats[SEARCH]

    assert search.title == "Debounce the search box"
    assert search.project == "/home/ana/src/shop"
    assert [(m.role, m.text) for m in search.messages] == [
        ("user", "The search box fires a request per keystroke, debounce it\n[image]"),
        ("assistant", 'I\'ll read the file first.\n\n[tool read_file: {"filepath": "src/search.ts"}]'),
        ("tool", "[tool result: export function search(q: string) { return fetch(`/api?q=${q}`) }]"),
        (
            "assistant",
            "Wrap `search` in a 300 ms debounce with `setTimeout`, clearing the previous timer on each keystroke.",
        ),
    ]
    assert search.created_at == datetime(2025, 5, 29, 10, 0, tzinfo=UTC)
    assert chats[WINDOWS].project == "c:\\Users\\ana\\src\\shop"  # as VS Code names the folder
    assert chats[WINDOWS].title == "Why does npm ci fail on Windows with EPERM?"
    assert [s.reason for s in report.skipped] == [
        "not valid JSON (Unterminated string starting at: line 1 column 141 (char 140))",
        "a session from before Continue 0.8 (a timeline): Continue no longer shows these",
    ]
    assert report.notes == ["ignored 1 message of unknown role 'critic'"]


def test_continue_is_found_in_its_global_dir(tmp_path: Path, fixtures: Path) -> None:
    home = tmp_path / "home"
    importer = ContinueImporter()
    session = fixtures / SHAPES / "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.json"

    assert importer.default_locations({}, home) == [home / ".continue/sessions"]
    assert importer.default_locations({"CONTINUE_GLOBAL_DIR": "/srv/continue"}, home) == [
        Path("/srv/continue/sessions")
    ]
    assert importer.context_files(session) == [fixtures / SHAPES / "sessions.json"]
    assert len(importer.session_files(fixtures / SHAPES)) == 4


def test_continue_leaves_inline_reasoning_out_and_says_which_listed_session_is_missing(
    fixtures: Path, import_fixture
) -> None:
    # A deepseek-r1 session: replies open with <think>…</think>; one was cut off while thinking; the
    # title Continue generated is the leaked reasoning. sessions.json lists a second session whose
    # file is gone.
    imported = import_fixture(fixtures / "continue/reasoning/sessions")

    [chat] = imported.conversations
    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "reframe this intro so it leads with the result"),
        ("assistant", "We cut query time by 40%. Here is how: an index on the join column."),
        ("user", "shorter"),
    ]
    assert chat.title == "reframe this intro so it leads with the result"
    assert imported.found("Alright") == []
    assert "a1b2c3d4-0002-4e5f-8a9b-c0d1e2f3a4b5" in imported.summary
    assert "missing" in imported.summary
