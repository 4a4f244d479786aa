"""OpenHands: the conversations of 1.x (the CLI's, on its agent SDK: a tree of events, and the linear
events before trees) and of 0.x's file store (the GUI server's metadata and events, the early CLI's
events alone), with broken event files and a conversation left empty."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.openhands import OpenHandsImporter, OpenHandsV0Importer

SHOP = "openhands-v0:7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7"
CLI = "openhands-v0:c41d2e7f0a9b4e3c8d2f1a0b9c8d7e6f"
OPS = "openhands:a3f25b1c3e3b47c2b2f6d735b039e302"
README = "openhands:c945f36f4f4c48d383a7e846c149f4db"


def test_openhands_conversations_follow_the_branch_in_use_and_leave_out_what_it_added(fixtures: Path, read_all) -> None:
    conversations, report = read_all(OpenHandsImporter(), fixtures / "openhands" / ".openhands")
    chats = {c.id: c for c in conversations}
    ops = chats[OPS]

    assert ops.title == "why does the cron job run twice?"
    assert ops.project == "/home/ana/ops"
    assert [(m.role, m.text) for m in ops.messages] == [
        ("user", "why does the cron job run twice?"),
        ("assistant", "Let me look at the crontab.\n\n[tool terminal: crontab -l]"),
        ("tool", "[tool result: 0 3 * * * /usr/local/bin/backup 0 3 * * * /usr/local/bin/backup]"),
        ("assistant", "The backup line is in the crontab twice."),
        ("user", "remove only the duplicate"),
        ("assistant", "[tool terminal: crontab -r]"),
        ("tool", "[tool error: not the whole crontab]"),
        ("assistant", "Removed the second backup line only."),
        ("tool", "[tool error: Tool 'terminal' timed out after 120 seconds]"),
        ("assistant", "Verified: one backup line is left."),
    ]
    text = " ".join(m.text for m in ops.messages)
    left_out = ("helpful AI assistant", "EXTRA_INFO", "two entries", "crontab -r.", "incomplete")
    assert not any(phrase in text for phrase in left_out)
    assert ops.created_at == datetime(2026, 3, 2, 9, 0, 5, tzinfo=UTC)

    readme = chats[README]  # before trees: every event in order; the replayed transcript left out
    assert [(m.role, m.text) for m in readme.messages] == [
        ("user", "write a README for this repo"),
        ("assistant", "Wrote README.md with install and usage sections."),
        ("user", "add a license section"),
        ("assistant", "Added an MIT license section."),
    ]
    assert readme.project == "/home/ana/src/tool"
    assert len(chats) == 2
    assert report.skipped == []
    assert "a3f25b1c3e3b47c2b2f6d735b039e302: 1 unreadable event file(s) skipped" in report.notes


def test_openhands_conversations_keep_what_was_said_and_done_but_not_what_it_injected(fixtures: Path, read_all) -> None:
    conversations, report = read_all(OpenHandsV0Importer(), fixtures / "openhands-v0" / ".openhands")
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


def test_openhands_is_found_in_both_stores(fixtures: Path, tmp_path: Path) -> None:
    canvas = tmp_path / ".openhands/agent-canvas/conversations"
    assert OpenHandsImporter().default_locations({}, tmp_path) == [tmp_path / ".openhands/conversations", canvas]
    moved = {"OPENHANDS_PERSISTENCE_DIR": "/srv/oh"}
    assert OpenHandsImporter().default_locations(moved, tmp_path) == [Path("/srv/oh/conversations"), canvas]
    moved = {"OPENHANDS_CONVERSATIONS_DIR": "~/chats", "OH_CONVERSATIONS_PATH": "/srv/canvas", **moved}
    assert OpenHandsImporter().default_locations(moved, tmp_path) == [tmp_path / "chats", Path("/srv/canvas")]
    assert OpenHandsV0Importer().default_locations({}, tmp_path) == [tmp_path / ".openhands/sessions"]
    moved = {"FILE_STORE_PATH": "/srv/openhands"}
    assert OpenHandsV0Importer().default_locations(moved, tmp_path) == [Path("/srv/openhands/sessions")]
    store = fixtures / "openhands" / ".openhands"
    assert registry.detect(store).name == "openhands"
    assert registry.detect(store / "conversations").name == "openhands"
    v0_store = fixtures / "openhands-v0" / ".openhands"
    assert registry.detect(v0_store).name == "openhands-v0"
    assert registry.detect(v0_store / "sessions").name == "openhands-v0"
    session = v0_store / "sessions" / SHOP.split(":")[1] / "metadata.json"
    assert registry.detect(session).name == "openhands-v0"
    assert len(OpenHandsV0Importer().context_files(session)) == 14
    state = store / "conversations" / OPS.split(":")[1] / "base_state.json"
    assert registry.detect(state).name == "openhands"
    assert len(OpenHandsImporter().context_files(state)) == 16
