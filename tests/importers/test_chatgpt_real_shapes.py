"""ChatGPT exports in 2025 shapes: reasoning messages, citation markup, and one-conversation files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

VAT = "chatgpt:68a1f2c3-4b5d-8006-9e7f-0a1b2c3d4e5f"
LOCKS = "chatgpt:68b0c1d2-0000-8000-9000-aabbccddeeff"


def test_chatgpt_a_file_holding_one_conversation_object_imports(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "chatgpt-2025" / "conversation-68b0c1d2.json")

    [chat] = imported.conversations
    assert chat.id == LOCKS
    assert chat.title == "Postgres advisory locks"
    assert chat.url == "https://chatgpt.com/c/68b0c1d2-0000-8000-9000-aabbccddeeff"
    assert [m.role for m in chat.messages] == ["user", "assistant"]  # the analysis channel is reasoning
    assert chat.created_at == datetime(2025, 8, 24, 1, 46, 40, tzinfo=UTC)
    assert imported.found("transaction ends try variant") == [LOCKS]


def test_chatgpt_reasoning_summaries_are_not_tool_messages(fixtures: Path, import_fixture) -> None:
    chat = import_fixture(fixtures / "chatgpt-2025" / "export").chat(VAT)

    assert [m.role for m in chat.messages] == ["user", "tool", "assistant"]
    assert chat.messages[1].text.startswith("[tool web.run] HMRC VAT guide")
    assert not [m for m in chat.messages if "Reasoned for" in m.text or "Weighing rounding" in m.text]
    assert "Half-up, always." not in [m.text for m in chat.messages]  # the regenerated branch stays out


def test_chatgpt_citation_markup_is_removed_and_entity_names_kept(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "chatgpt-2025" / "export")
    answer = imported.chat(VAT).messages[-1].text

    assert answer == (
        "For UK invoices HMRC accepts rounding the VAT total half-up to the penny. "
        "Your own spec says the same, and the invoice total is what counts. HMRC publishes the rule."
    )
    assert not [ch for ch in answer if "\ue200" <= ch <= "\ue2ff"]
    assert imported.found("HMRC publishes the rule") == [VAT]


def test_chatgpt_2025_export_keeps_title_times_and_reports_unknown_content(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / "chatgpt-2025" / "export")
    chat = imported.chat(VAT)

    assert chat.title == "VAT rounding mode"
    assert chat.created_at == datetime(2025, 8, 14, 11, 13, 20, tzinfo=UTC)
    assert chat.updated_at == datetime(2025, 8, 14, 11, 13, 46, tzinfo=UTC)
    assert "note: ignored 1 message of unknown content type 'future_card'" in imported.summary
