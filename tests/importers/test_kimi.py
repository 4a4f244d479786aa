"""Kimi CLI: the wire logs of protocol 1.10 and before, and the context logs of sessions without one
(in a session folder, and named after the session before the folders), broken lines included."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.kimi import KimiImporter

SHOP = "kimi-cli:2b7e4c1a-9d3f-4e6a-8b5c-1d2e3f4a5b6c"
TODOS = "kimi-cli:3c8f5d2b-0e4a-4f7b-9c6d-2e3f4a5b6c7d"
NOTES = "kimi-cli:4d9a6e3c-1f5b-4a8c-8d7e-3f4a5b6c7d8e"
IDEAS = "kimi-cli:5e0b7f4d-2a6c-4b9d-9e8f-4a5b6c7d8e9f"


def test_kimi_sessions_read_what_was_typed_and_answered(fixtures: Path, read_all) -> None:
    conversations, report = read_all(KimiImporter(), fixtures / "kimi-cli" / ".kimi")
    chats = {c.id: c for c in conversations}
    shop = chats[SHOP]

    assert shop.title == "Cart total and shipping"
    assert shop.project == "/home/ana/src/shop"
    assert [(m.role, m.text) for m in shop.messages] == [
        ("user", "why does the cart total skip shipping?"),
        ("assistant", "Let me look at the cart.\n\n[tool ReadFile: cart.py]"),
        ("tool", "[tool result: def total(self): return sum(self.items)]"),
        ("assistant", "`total` never adds `self.shipping`."),
        ("user", "fix it and run the tests"),
        ("assistant", "[tool Shell: pytest -q]"),
        ("tool", "[tool error: 1 failed, 11 passed]"),
        ("user", "only the cart tests"),
        ("assistant", "The cart tests pass now."),
    ]
    assert not any("cart.py first" in m.text or "subagent" in m.text for m in shop.messages)
    assert shop.created_at == datetime.fromtimestamp(1781000000.125, UTC)
    assert shop.updated_at == datetime.fromtimestamp(1781000068.0, UTC)

    todos = chats[TODOS]  # no header; the title from the metadata.json of then; cut off at the end
    assert todos.title == "TODOs"
    assert [(m.role, m.text) for m in todos.messages][2:] == [  # files the web UI attached, by name
        ("user", "[file /home/ana/src/shop/TODO.md]\n\n[image /home/ana/shot.png]\n\nwhich of these is done?"),
        ("assistant", "Neither yet."),
    ]

    notes = chats[NOTES]  # a context log: what Kimi CLI added is left out
    assert notes.project == "/home/ana/notes"
    assert [(m.role, m.text) for m in notes.messages] == [
        ("user", "summarise notes/2025-11.md"),
        ("assistant", "Reading it.\n\n[tool ReadFile: notes/2025-11.md]"),
        ("tool", "[tool result: Shipped the cart fix.]"),
        ("assistant", "November: the cart fix shipped."),
    ]
    assert chats[IDEAS].title == "what's in notes/ideas.md?"
    assert chats[IDEAS].project == "/home/ana/notes"

    assert len(chats) == 4  # the context log beside a wire log is not a second chat
    assert report.skipped == []
    assert any("cut off mid-write" in note for note in report.notes)


def test_kimi_is_found_in_its_share_folder(fixtures: Path, tmp_path: Path) -> None:
    assert KimiImporter().default_locations({}, tmp_path) == [tmp_path / ".kimi/sessions"]
    assert KimiImporter().default_locations({"KIMI_SHARE_DIR": "/data/kimi"}, tmp_path) == [Path("/data/kimi/sessions")]
    share = fixtures / "kimi-cli" / ".kimi"
    assert registry.detect(share).name == "kimi-cli"
    wire = next(share.glob("sessions/*/2b7e*/wire.jsonl"))
    assert registry.detect(wire).name == "kimi-cli"
    assert [f.name for f in KimiImporter().context_files(wire)] == ["state.json", "kimi.json"]
