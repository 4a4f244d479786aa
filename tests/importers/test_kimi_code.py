"""Kimi Code: sessions of wire protocol 1.0-1.5, what only Kimi Code sent in the user's place left out,
a session it imported from Kimi CLI left to `kimi-cli`, and a log cut off mid-write."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.kimi import KimiCodeImporter

SHOP = "kimi-code:session_8f2c1d4e-5a6b-4c7d-9e8f-0a1b2c3d4e5f"
DRAFT = "kimi-code:session_0b4e3f6a-7c8d-4e9f-9a0b-2c3d4e5f6a71"


def test_kimi_code_sessions_read_the_main_agent_as_typed(fixtures: Path, read_all) -> None:
    conversations, report = read_all(KimiCodeImporter(), fixtures / "kimi-code" / ".kimi-code")
    chats = {c.id: c for c in conversations}
    shop = chats[SHOP]

    assert shop.title == "Cart total skips shipping"
    assert shop.project == "/home/ana/src/shop"
    assert [(m.role, m.text) for m in shop.messages] == [
        ("user", "why does the cart total skip shipping?"),
        ("assistant", "Reading the cart.\n\n[tool ReadFile: cart.py]"),
        ("tool", "[tool result: def total(self): return sum(self.items)]"),
        ("assistant", "`total` never adds shipping."),
        ("assistant", "[tool Shell: pytest -q]"),
        ("tool", "[tool error: 1 failed, 11 passed]"),
        ("user", "just the cart tests"),
        ("assistant", "The cart tests pass."),
    ]
    text = " ".join(m.text for m in shop.messages)
    for left_out in ("Check cart.py", "test-runner", "Plan mode", "run the suite", "interactive agent"):
        assert left_out not in text
    assert shop.created_at == datetime(2026, 8, 6, 7, 6, 40, tzinfo=UTC)
    assert shop.messages[0].created_at == datetime(2026, 8, 6, 7, 6, 41, tzinfo=UTC)

    draft = chats[DRAFT]  # no state.json: titled by its prompt, its folder from the session index
    assert draft.title == "draft a post about the release"
    assert draft.project == "/home/ana/src/blog"

    assert sorted(chats) == [DRAFT, SHOP]
    assert report.skipped == []
    assert "1 session(s) Kimi Code imported from Kimi CLI are read from Kimi CLI's files" in report.notes
    assert any("cut off mid-write" in note for note in report.notes)


def test_kimi_code_is_found_in_its_data_folder(fixtures: Path, tmp_path: Path) -> None:
    assert KimiCodeImporter().default_locations({}, tmp_path) == [tmp_path / ".kimi-code/sessions"]
    moved = {"KIMI_CODE_HOME": "/data/kc"}
    assert KimiCodeImporter().default_locations(moved, tmp_path) == [Path("/data/kc/sessions")]
    home = fixtures / "kimi-code" / ".kimi-code"
    assert registry.detect(home).name == "kimi-code"
    wire = next(home.glob("sessions/wd_shop_*/session_*/agents/main/wire.jsonl"))
    assert registry.detect(wire).name == "kimi-code"
    assert [f.name for f in KimiCodeImporter().context_files(wire)] == ["state.json", "session_index.jsonl"]
