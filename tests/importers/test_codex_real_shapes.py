"""Codex rollouts as codex 0.169 writes them (tool calls, compaction, bookkeeping) next to the older ones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

GEO = "codex:019e1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a61"


def test_codex_0_169_rollout_keeps_the_conversation_and_summarises_tools(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "codex-2026")
    chat = imported.chat(GEO)

    assert [m.role for m in chat.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert chat.messages[1].text == "[tool exec_command: rg -n 'def decode' geo/geohash.py]"
    assert chat.title == "the geohash decoder returns swapped lat/lon for odd precisions"
    assert chat.project == "/home/ana/src/geo"
    assert (chat.created_at, chat.updated_at) == (
        datetime(2026, 5, 11, 7, 0, tzinfo=UTC),
        datetime(2026, 5, 11, 7, 0, 25, tzinfo=UTC),
    )
    assert imported.found("longitude bit parity")[0] == GEO
    assert "note: ignored 1 record of unknown type 'future_record'" in imported.summary
    assert "'event_msg'" not in imported.summary
    assert "'compacted'" not in imported.summary


def test_codex_older_rollouts_import_as_before(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "codex")

    assert len(imported.conversations) == 2
    assert {c.project for c in imported.conversations} == {"/home/ana/src/legacy", "/home/ana/src/api"}
    assert all(c.created_at.year == 2025 for c in imported.conversations)


def test_codex_desktop_wrappers_give_the_request_as_the_users_words(fixtures: Path, import_fixture) -> None:
    # A hand-off from another Codex conversation, the IDE's open tabs, files mentioned: the user's
    # words are the request after "## My request for Codex:", and the hand-off's JSON is no title.
    imported = import_fixture(fixtures / "codex-desktop")

    [chat] = imported.conversations
    assert chat.title == "implement the CSV export we planned"
    assert [m.text for m in chat.messages if m.role == "user"] == [
        "implement the CSV export we planned",
        "add a header row",
        "compare with this file",
    ]
    assert chat.project == "C:\\Users\\ana\\src\\ledger"
    assert imported.found("commas") == []  # the earlier conversation handed off is not this one
