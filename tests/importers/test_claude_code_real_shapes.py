"""Claude Code 2.1 transcripts as the CLI writes them: the prompt queue, auto-compaction, bookkeeping."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

SESSION = "7b3e9c10-2f4a-4c1d-9e8b-5a6f7d8e9f01"
MAIN = f"claude-code:{SESSION}"
SUBAGENT = f"claude-code:{SESSION}:agent-a4d21e7"


def test_claude_code_prompts_typed_while_busy_are_imported_once_where_they_were_typed(
    fixtures: Path, import_fixture
) -> None:
    imported = import_fixture(fixtures / "claude-code-2.1")
    chat = imported.chat(MAIN)

    prompts = [m.text for m in chat.messages if m.role == "user"]
    assert prompts == [
        "the invoice totals are off by a cent when VAT is rounded per line",
        "also check the credit notes",  # dequeued: the user record that follows is the message
        "apply the fix and run the tests",
        "use Decimal, not float, for the VAT rate",  # taken in mid-turn; only the queue log has it
        "then bump the version to 3.4.1",  # taken in mid-turn, carried by a queued_command attachment
        "and the pdf footer should show the VAT number",
        "tomorrow: split invoices by currency",  # still queued when the session ended
    ]
    decimal = next(m for m in chat.messages if m.text.startswith("use Decimal"))
    assert decimal.created_at == datetime(2026, 1, 27, 7, 19, 32, tzinfo=UTC)
    assert imported.found("Decimal instead of float")[0] == MAIN


def test_claude_code_notifications_and_prompts_taken_back_are_not_user_messages(fixtures: Path, import_fixture) -> None:
    chat = import_fixture(fixtures / "claude-code-2.1").chat(MAIN)

    texts = [m.text for m in chat.messages]
    assert "and the pdf footer" not in texts  # pulled back with popAll, then sent edited
    assert not [t for t in texts if "task-notification" in t]
    assert [m.role for m in chat.messages].count("system") == 1  # the compaction summary


def test_claude_code_auto_compaction_logs_are_not_chats_but_task_subagents_are(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "claude-code-2.1")

    assert [c.id for c in imported.conversations] == [MAIN, SUBAGENT]
    assert not [c for c in imported.conversations if "detailed summary" in c.title]
    assert "note: left out 1 auto-compaction helper log(s) (agent-acompact-*)" in imported.summary
    subagent = imported.chat(SUBAGENT)
    assert subagent.title == "Subagent: Find every caller of round_vat in the billing package"
    assert subagent.project == "/home/ana/src/invoices"


def test_claude_code_2_1_session_keeps_its_title_project_and_times(fixtures: Path, import_fixture) -> None:
    chat = import_fixture(fixtures / "claude-code-2.1").chat(MAIN)

    assert chat.title == "Fix VAT rounding in invoice totals"
    assert chat.project == "/home/ana/src/invoices"
    assert chat.created_at == datetime(2026, 1, 27, 7, 19, 6, tzinfo=UTC)
    assert chat.updated_at == datetime(2026, 1, 27, 7, 19, 58, tzinfo=UTC)
    assert all(m.created_at is not None and m.created_at.year == 2026 for m in chat.messages)


def test_claude_code_unknown_record_types_are_reported_and_bookkeeping_is_not(fixtures: Path, import_fixture) -> None:
    summary = import_fixture(fixtures / "claude-code-2.1").summary

    assert "note: ignored 1 record of unknown type 'future-kind'" in summary
    for bookkeeping in ("progress", "file-history-snapshot", "last-prompt", "system", "attachment"):
        assert f"type '{bookkeeping}'" not in summary


def test_claude_code_keeps_the_ides_context_out_of_the_users_words_and_one_windows_folder_is_one_project(
    fixtures: Path, import_fixture
) -> None:
    # VS Code's extension adds the open file and the selection to a prompt as tagged text blocks;
    # the CLI recorded the same folder as `c:\…` in one session and `C:\…` in the next; the user
    # stopped a tool (Claude Code logs a marker as their message) and said what to do instead.
    imported = import_fixture(fixtures / "claude-code-windows")

    prompts = {c.title: [m.text for m in c.messages if m.role == "user"] for c in imported.conversations}
    assert prompts == {
        "why is the cart total off by a cent?": ["why is the cart total off by a cent?"],
        "rewrite this reduce without the per-line rounding": [
            "rewrite this reduce without the per-line rounding",
            "keep the rounding per line, the tax office wants it",  # after a stop, which is no words of theirs
        ],
    }
    assert {c.project for c in imported.conversations} == {"C:\\Users\\ana\\src\\shop"}
    assert imported.found("opened") == []
    assert imported.found("selected") == []
