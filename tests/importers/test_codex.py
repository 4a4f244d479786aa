from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from importers.codex import CodexImporter, default_locations

IMPORTER = CodexImporter()
NEW_ID = "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
LEGACY_ID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


def _rollout(fixtures: Path) -> Path:
    return fixtures / "codex" / "sessions" / "2025" / "03" / "14" / f"rollout-2025-03-14T09-00-00-{NEW_ID}.jsonl"


def test_codex_rollout_gives_the_session_id_cwd_project_and_real_turns(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _rollout(fixtures))

    assert chat.id == f"codex:{NEW_ID}"
    assert chat.source == "codex"
    assert chat.project == "/home/ana/src/api"
    assert chat.created_at == datetime(2025, 3, 14, 9, 0, tzinfo=UTC)
    assert chat.title == "Add pagination to the /users endpoint"
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "assistant"]
    assert chat.messages[0].text == "Add pagination to the /users endpoint"
    assert chat.messages[-1].text == "I added `limit` and `cursor` query parameters to list_users."


def test_codex_injected_context_developer_messages_and_reasoning_are_left_out(fixtures: Path, read_all) -> None:
    [chat], report = read_all(IMPORTER, _rollout(fixtures))
    texts = " ".join(m.text for m in chat.messages)

    for noise in ("AGENTS-NOISE", "environment_context", "DEVELOPER-NOISE", "REASONING-NOISE"):
        assert noise not in texts
    assert texts.count("Add pagination") == 1  # the event_msg copy is not a second message
    assert "ignored 1 response item of unknown type 'future_item_kind'" in report.notes


def test_codex_tool_calls_and_output_are_one_short_line_each(fixtures: Path, read_all) -> None:
    [chat], _ = read_all(IMPORTER, _rollout(fixtures))

    assert chat.messages[1].text == "[tool shell: bash -lc rg -n 'def list_users' src]"
    # the early rollouts' JSON envelope is shown as the command's text, then its exit code in words
    assert chat.messages[2].text == "[tool result: src/users.py:12:def list_users(db): (succeeded, exit code 0)]"


def test_codex_message_ids_are_stable_across_reimports(fixtures: Path, read_all) -> None:
    [first], _ = read_all(IMPORTER, _rollout(fixtures))
    [again], _ = read_all(IMPORTER, _rollout(fixtures))

    assert [m.id for m in first.messages] == [m.id for m in again.messages]
    assert first.messages[0].id == f"codex:{NEW_ID}:6"


def test_codex_legacy_rollout_without_payload_wrappers_still_imports(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(IMPORTER, fixtures / "codex" / "archived_sessions")

    [chat] = conversations
    assert chat.id == f"codex:{LEGACY_ID}"
    assert chat.project == "/home/ana/src/legacy"  # only named in the environment context
    assert [m.text for m in chat.messages] == [
        "Explain the retry decorator in utils.py",
        "It retries with exponential backoff up to five times.",
    ]
    assert chat.created_at == datetime(2025, 1, 5, 14, 30, tzinfo=UTC)


def test_codex_home_reads_sessions_and_archived_sessions(fixtures: Path, read_all) -> None:
    conversations, report = read_all(IMPORTER, fixtures / "codex")

    assert sorted(c.id for c in conversations) == [f"codex:{NEW_ID}", f"codex:{LEGACY_ID}"]
    assert report.skipped == []
    assert IMPORTER.detect(fixtures / "codex")
    assert IMPORTER.detect(fixtures / "codex" / "sessions")


def test_codex_default_locations_honour_codex_home() -> None:
    home = Path("/home/ana")

    assert default_locations({}, home) == [home / ".codex" / "sessions", home / ".codex" / "archived_sessions"]
    assert default_locations({"CODEX_HOME": "/opt/codex"}, home)[0] == Path("/opt/codex/sessions")
