"""pi: session files of each version pi-mono's coding agent has written (1: a line of entries with
the system prompt in the header; 2: a tree; 3: extension messages renamed), and broken ones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.pi import PiImporter

SHOP = "pi:019c2f4e-8a1b-7c3d-9e4f-5a6b7c8d9e0f"
BLOG = "pi:5b7c9d1e-2f3a-4b5c-8d6e-7f8091a2b3c4"
PORT = "pi:7d9e1f20-3a4b-4c5d-9e6f-8091a2b3c4d5"


def test_pi_sessions_read_the_current_branch_as_typed(fixtures: Path, read_all) -> None:
    conversations, report = read_all(PiImporter(), fixtures / "pi" / "sessions")
    chats = {c.id: c for c in conversations}
    shop = chats[SHOP]

    assert shop.title == "Cart total misses shipping"
    assert shop.project == "/home/ana/src/shop"
    assert [(m.role, m.text) for m in shop.messages] == [
        ("user", "/skill:pytest-fix test_cart_total fails after the refactor"),
        ("assistant", "Running it first.\n\n[tool bash: pytest tests/test_cart.py -x]"),
        ("tool", "[tool error: FAILED tests/test_cart.py::test_cart_total - assert 40 == 45]"),
        ("assistant", "The total leaves out shipping; `Cart.total` must add it."),
        ("user", "[file /home/ana/src/shop/cart.py]\nfix it here\n\n[image]"),
        ("assistant", "Added `self.shipping` to the sum."),
        ("user", "!git diff --stat"),
        ("tool", "[tool result: cart.py | 2 +-]"),
    ]
    text = " ".join(m.text for m in shop.messages)
    for left_out in ("rust", "Explored a Rust", "Branch: main", "expert coding", "bottom-up", "wants the failing"):
        assert left_out not in text
    assert shop.created_at == datetime(2026, 2, 10, 8, 0, tzinfo=UTC)
    assert shop.messages[0].created_at == datetime(2026, 2, 10, 8, 0, 5, tzinfo=UTC)

    blog = chats[BLOG]  # version 1: no ids, the system prompt in the header
    assert blog.title == "why is the RSS feed empty?"
    assert [m.role for m in blog.messages] == ["user", "assistant", "tool", "assistant"]
    assert "expert coding" not in " ".join(m.text for m in blog.messages)

    port = chats[PORT]  # version 2: the extension's hookMessage is nobody's words
    assert [(m.role, m.text) for m in port.messages] == [
        ("user", "what's using port 5432?"),
        ("assistant", "A local postgres 16 server."),
    ]
    assert port.project == "/home/ana"

    assert len(chats) == 3
    assert [(Path(s.where).name, s.reason) for s in report.skipped] == [
        ("2025-12-29T09-00-00-000Z_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d.jsonl", "no messages")
    ]
    assert any("cut off mid-write" in note for note in report.notes)
    assert any("1 unreadable line(s)" in note for note in report.notes)


def test_pi_is_found_in_its_agent_folder_and_detected_by_its_header(fixtures: Path, tmp_path: Path) -> None:
    assert PiImporter().default_locations({}, tmp_path) == [tmp_path / ".pi/agent/sessions"]
    moved = {"PI_CODING_AGENT_DIR": "~/agents/pi"}
    assert PiImporter().default_locations(moved, tmp_path) == [tmp_path / "agents/pi/sessions"]
    sessions = fixtures / "pi" / "sessions"
    assert registry.detect(sessions).name == "pi"
    assert registry.detect(next((sessions / "--home-ana-src-blog--").glob("*.jsonl"))).name == "pi"
