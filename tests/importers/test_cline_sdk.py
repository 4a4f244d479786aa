"""Cline's SDK sessions (the `cline` CLI 2 and its hub): `sessions/<id>/<id>.messages.json` with
its manifest, and `db/sessions.db`, in the shapes the SDK writes (the runtime's wrappers, tools,
thinking, a sub-agent, a session of the first versions known only to the index, one started
without a project, one cut off mid-write)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers import registry
from importers.cline_sdk import ClineSdkImporter

DATA = "cline-sdk/shapes/data"
SIDEBAR = "cline-sdk:1784094124598_rruoq"
CART = "cline-sdk:1781000000000_abcde"
LIMITER = "cline-sdk:1785000000000_zzzzz"


def test_cline_sdk_sessions_read_as_clines_transcript_shows_them(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / DATA / "sessions")

    assert sorted(c.id for c in imported.conversations) == sorted([SIDEBAR, CART, LIMITER])
    chat = imported.chat(SIDEBAR)
    assert (chat.title, chat.project) == (
        "why does the sidebar filter icon come before the Sessions button",
        "/home/ana/src/desk",
    )
    assert (chat.created_at, chat.updated_at) == (
        datetime(2026, 7, 15, 5, 42, 4, 609000, tzinfo=UTC),
        datetime(2026, 7, 15, 5, 44, 10, 865000, tzinfo=UTC),
    )
    assert [(m.role, m.text) for m in chat.messages] == [
        ("user", "why does the sidebar filter icon come before the Sessions button\n\n[file agent-sidebar.tsx]"),
        (
            "assistant",
            "The header renders the Filter button first.\n\n"
            "[tool read_files: /home/ana/src/desk/webview/components/agent-sidebar.tsx]",
        ),
        ("tool", "[tool result: <Filter /> <Button>Sessions</Button>]"),
        ("assistant", "[tool spawn_agent: find other headers]"),
        ("tool", "[tool result: Only the sidebar has it.]"),
        ("assistant", "Only the sidebar; swapping the two elements fixes it."),
        ("user", "/commit swap them and commit"),
        ("assistant", "Swapped and committed."),
    ]
    assert imported.found("JSX") == []  # thinking
    assert "unknown type 'hologram'" in imported.summary
    assert "1786000000000_broke" in imported.summary  # cut off mid-write: reported, not dropped silently


def test_cline_sdk_takes_what_the_manifest_lacks_from_the_index(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / DATA / "sessions")

    cart = imported.chat(CART)
    assert (cart.title, cart.project) == ("how do I run only the cart tests?", "/home/ana/src/shop")
    assert cart.created_at == datetime(2026, 6, 8, 20, 53, 20, tzinfo=UTC)
    assert [m.text for m in cart.messages] == ["how do I run only the cart tests?", "npm test -- cart"]
    limiter = imported.chat(LIMITER)
    assert (limiter.project, limiter.messages[0].text) == (None, "What is a sliding window rate limiter")


def test_cline_sdk_is_found_in_clines_data_folder_on_every_os(fixtures: Path, tmp_path: Path) -> None:
    importer = ClineSdkImporter()
    home = tmp_path / "home"
    assert importer.default_locations({}, home) == [home / ".cline" / "data" / "sessions"]
    assert importer.default_locations({"CLINE_DIR": "/opt/cline"}, home) == [Path("/opt/cline/data/sessions")]
    assert importer.default_locations({"CLINE_DATA_DIR": "/d"}, home) == [Path("/d/sessions")]
    assert importer.default_locations({"CLINE_SESSION_DATA_DIR": "/s"}, home) == [Path("/s")]
    sessions = fixtures / DATA / "sessions"
    assert len(importer.session_files(sessions)) == 4  # not the sub-agent's messages
    assert importer.session_files(sessions / "1785000000000_zzzzz") == [
        sessions / "1785000000000_zzzzz" / "1785000000000_zzzzz.messages.json"
    ]
    assert [
        p.name for p in importer.context_files(sessions / "1781000000000_abcde/1781000000000_abcde.messages.json")
    ] == ["sessions.db"]
    for path in (fixtures / DATA, sessions, sessions / "1784094124598_rruoq/1784094124598_rruoq.messages.json"):
        assert registry.detect(path).name == "cline-sdk"


def test_reimporting_cline_sdk_adds_nothing(fixtures: Path, import_fixture) -> None:
    first = import_fixture(fixtures / DATA / "sessions")
    again = import_fixture(fixtures / DATA / "sessions", library=first.library)

    assert f"0 new, 0 updated, {len(first.conversations)} unchanged" in again.summary
