"""OpenHands: conversations in its local file store, as the GUI server (metadata and events) and the
early CLI (events alone) wrote them, with a broken event file and a conversation left empty."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.openhands import OpenHandsImporter

SHOP = "openhands:7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7"
CLI = "openhands:c41d2e7f0a9b4e3c8d2f1a0b9c8d7e6f"


def test_openhands_conversations_keep_what_was_said_and_done_but_not_what_it_injected(fixtures: Path, read_all) -> None:
    conversations, report = read_all(OpenHandsImporter(), fixtures / "openhands" / ".openhands")
    chats = {c.id: c for c in conversations}
    shop = chats[SHOP]

    assert shop.title == "Signup accepts an empty email"
    assert shop.project == "ana/shop"
    assert [(m.role, m.text) for m in shop.messages] == [
        ("user", "the signup form accepts an empty email"),
        ("assistant", "Let me find the validator.\n\n[tool run: grep -rn email src/signup]"),
        ("tool", "[tool result: src/signup/validate.ts:4: if (email === undefined) return false]"),
        ("assistant", "[tool edit: /workspace/shop/src/signup/validate.ts]"),
        ("tool", "[tool result: The file /workspace/shop/src/signup/validate.ts has been edited.]"),
        ("assistant", "Blank emails are rejected now: the check trims before testing."),
        ("user", "add a test too\n\n[file /workspace/shop/spec.md]\n\n[image]"),
        ("assistant", "Added validate.test.ts covering blank and spaces-only emails."),
    ]
    text = " ".join(m.text for m in shop.messages)
    for injected in ("helpful AI assistant", "pnpm", "GITHUB_TOKEN", "skips blank strings"):
        assert injected not in text
    assert shop.created_at == datetime(2025, 9, 12, 10, 0, 0, 10000, tzinfo=UTC)
    assert shop.updated_at == datetime(2025, 9, 12, 10, 1, 41, 2311, tzinfo=UTC)

    cli = chats[CLI]
    assert cli.title == "what does make release do?"
    assert cli.project is None
    assert [m.role for m in cli.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert cli.messages[3].text == "[tool error: the tool timed out]"

    assert len(chats) == 2
    assert [(s.where, s.reason) for s in report.skipped] == [
        ("sessions/0e0e0e0e0e0e4e0e8e0e0e0e0e0e0e0e/metadata.json", "no messages")
    ]
    assert "c41d2e7f0a9b4e3c8d2f1a0b9c8d7e6f: 1 unreadable event file(s) skipped" in report.notes


def test_openhands_is_found_in_its_file_store(fixtures: Path, tmp_path: Path) -> None:
    assert OpenHandsImporter().default_locations({}, tmp_path) == [tmp_path / ".openhands/sessions"]
    moved = {"FILE_STORE_PATH": "/srv/openhands"}
    assert OpenHandsImporter().default_locations(moved, tmp_path) == [Path("/srv/openhands/sessions")]
    store = fixtures / "openhands" / ".openhands"
    assert registry.detect(store).name == "openhands"
    session = store / "sessions" / SHOP.split(":")[1] / "metadata.json"
    assert registry.detect(session).name == "openhands"
    assert len(OpenHandsImporter().context_files(session)) == 14
