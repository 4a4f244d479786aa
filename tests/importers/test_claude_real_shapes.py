"""Claude.ai conversations that carry their edit/retry tree (`parent_message_uuid` on every message)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

BREAD = "claude:3f0c9a1e-5555-4000-8000-000000000101"
CAT = "claude:3f0c9a1e-5555-4000-8000-000000000102"


def test_claude_edited_and_retried_branches_keep_only_the_visible_thread(
    fixtures: Path, import_fixture, zip_dir
) -> None:
    imported = import_fixture(zip_dir(fixtures / "claude-branches"))
    bread = imported.chat(BREAD)

    assert [(m.role, m.text) for m in bread.messages] == [
        ("user", "what hydration for a first sourdough loaf?"),
        ("assistant", "Start around 70% hydration."),
        ("user", "with 20% whole wheat flour?"),
        ("assistant", "With 20% whole wheat, aim for 74% and autolyse for 45 minutes."),
    ]
    assert bread.title == "Sourdough hydration"
    assert (bread.created_at, bread.updated_at) == (
        datetime(2026, 3, 1, 8, 0, tzinfo=UTC),
        datetime(2026, 3, 1, 8, 20, tzinfo=UTC),
    )
    assert imported.found("autolyse whole wheat") == [BREAD]
    assert imported.found("rye absorbs") == []  # the edited-away branch is not part of the chat


def test_claude_without_a_current_leaf_the_newest_branch_is_the_thread(fixtures: Path, import_fixture, zip_dir) -> None:
    imported = import_fixture(zip_dir(fixtures / "claude-branches"))
    cat = imported.chat(CAT)

    assert [m.text for m in cat.messages] == ["name for a bakery cat", "Levain, after the starter."]
    assert cat.title == "name for a bakery cat"
    assert "note: some Claude conversations named no current message" in imported.summary
    assert "note: ignored 1 content block of unknown type 'voice_note'" in imported.summary
