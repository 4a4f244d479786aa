from __future__ import annotations

import builtins
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from importers.sources.sync_state import STATE_FILE
from storage.units.passages import split_passages
from storage.writing.locks import WriteLock
from tests.importers.sources.agent_home import (
    CODEX,
    CODEX_FILE,
    SHOP,
    SHOP_FILE,
    AgentHome,
    claude_line,
    make_agent_home,
)


@pytest.fixture
def agents(tmp_path: Path) -> AgentHome:
    return make_agent_home(tmp_path)


def ids(agents: AgentHome) -> set[str]:
    return {c.id for c in agents.library.iter_conversations()}


def test_sync_imports_every_agent_log_and_archives_a_copy_of_each(agents: AgentHome) -> None:
    report = agents.syncer().run_once()
    assert report.not_run is None
    assert report.files_failed == []
    assert (report.files_seen, report.files_new) == (7, 7)
    assert {SHOP, f"{SHOP}:agent-a1b2c3", CODEX} <= ids(agents)
    assert {cid.split(":")[0] for cid in ids(agents)} == {"claude-code", "codex", "gemini"}
    assert report.conversations_new == len(ids(agents))
    assert agents.archived(SHOP_FILE, "claude-code").read_bytes() == agents.path(SHOP_FILE).read_bytes()
    assert agents.archived(CODEX_FILE, "codex").read_bytes() == agents.path(CODEX_FILE).read_bytes()


def test_a_second_sync_adds_nothing_and_opens_no_unchanged_file(
    agents: AgentHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents.syncer().run_once()
    opened: list[str] = []
    real_open = io.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    report = agents.syncer().run_once()
    assert (report.files_unchanged, report.files_changed) == (7, 0)
    assert (report.conversations_new, report.conversations_updated, report.chunks_embedded) == (0, 0, 0)
    assert [path for path in opened if path.startswith(str(agents.home))] == []


def test_appending_turns_indexes_exactly_the_new_turns_and_appends_them_to_the_archive(agents: AgentHome) -> None:
    agents.syncer().run_once()
    before = agents.library.get(SHOP)
    source = agents.path(SHOP_FILE)
    tail = claude_line("n-1", "a-4", "user", "Can the rounding helper handle negative refunds too?")
    tail += claude_line("n-2", "n-1", "assistant", "Yes: round half away from zero keeps refunds symmetric.")
    with source.open("a", encoding="utf-8") as handle:
        handle.write(tail)

    report = agents.syncer().run_once()

    after = agents.library.get(SHOP)
    new_messages = after.messages[len(before.messages) :]
    assert [m.text for m in new_messages][-2:] == [
        "Can the rounding helper handle negative refunds too?",
        "Yes: round half away from zero keeps refunds symmetric.",
    ]
    assert after.messages[: len(before.messages)] == before.messages
    assert (report.files_grown, report.files_unchanged, report.conversations_updated) == (1, 6, 1)
    assert report.chunks_embedded == sum(len(split_passages(m.text)) for m in new_messages)
    assert report.archived_bytes == len(tail.encode())
    assert agents.archived(SHOP_FILE, "claude-code").read_bytes() == source.read_bytes()
    assert SHOP in [chat.uri for chat in agents.library.search("negative refunds symmetric", max_results=2).chats]


def test_editing_a_file_reindexes_it_and_copies_it_whole(agents: AgentHome) -> None:
    agents.syncer().run_once()
    source = agents.path(CODEX_FILE)
    text = source.read_text(encoding="utf-8")
    assert "api" in text
    source.write_text(text.replace("/home/ana/src/api", "/home/ana/src/gateway"), encoding="utf-8")

    report = agents.syncer().run_once()

    assert (report.files_edited, report.conversations_updated) == (1, 1)
    assert agents.library.get(CODEX).project == "/home/ana/src/gateway"
    assert agents.archived(CODEX_FILE, "codex").read_bytes() == source.read_bytes()


def test_a_deleted_source_file_leaves_its_chats_searchable_and_its_archive_copy(agents: AgentHome) -> None:
    agents.syncer().run_once()
    archived = agents.archived(SHOP_FILE, "claude-code").read_bytes()
    agents.path(SHOP_FILE).unlink()

    report = agents.syncer().run_once()

    assert (report.files_seen, report.files_changed) == (6, 0)
    assert agents.library.get(SHOP).title == "Checkout test rounding fix"
    assert SHOP in [chat.uri for chat in agents.library.recent(n=20).chats]
    assert agents.archived(SHOP_FILE, "claude-code").read_bytes() == archived


def test_a_corrupt_file_is_reported_and_the_rest_is_synced(agents: AgentHome) -> None:
    broken = agents.path(".codex/sessions/2025/03/15/rollout-2025-03-15T09-00-00-broken.jsonl")
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b'{"type": "session_meta", "payload": {"id": "x"\n\x00\xff garbage\n')

    report = agents.syncer().run_once()

    assert [problem.where for problem in report.files_failed] == [str(broken)]
    assert report.files_new == 8
    assert {SHOP, CODEX} <= ids(agents)
    again = agents.syncer().run_once()
    assert (again.files_failed, again.files_unchanged) == ([], 8)


def test_sync_skips_and_says_so_when_another_process_is_writing(agents: AgentHome) -> None:
    with WriteLock(agents.library.home).hold():
        report = agents.syncer().run_once()
    assert report.not_run is not None
    assert "another pastchats process is writing" in report.text()
    assert agents.library.is_empty()
    assert agents.syncer().run_once().files_new == 7


def test_extra_paths_add_aider_histories_and_a_missing_one_is_reported(agents: AgentHome, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".aider.chat.history.md").write_bytes(
        (Path(__file__).parents[2] / "fixtures/importers/aider/.aider.chat.history.md").read_bytes()
    )
    report = agents.syncer(extra_paths=(repo, tmp_path / "nowhere")).run_once()
    assert report.files_new == 8
    assert any(cid.startswith("aider:") for cid in ids(agents))
    assert [(p.where, p.reason) for p in report.files_failed] == [(str(tmp_path / "nowhere"), "does not exist")]


def test_a_note_on_a_file_names_it_once(agents: AgentHome) -> None:
    report = agents.syncer().run_once()
    [note] = [note for note in report.notes if "cut off mid-write" in note]
    cut = next((agents.home / ".claude" / "projects" / "-home-ana-src-cut").glob("*.jsonl"))
    assert note.startswith(f"{cut}: the last line was cut off mid-write")
    assert note.count(cut.name) == 1


def test_chats_synced_before_touches_were_recorded_get_them_from_the_next_sync(agents: AgentHome) -> None:
    """A store an older pastchats synced: its chats lack what their tool calls touched, and its sync state
    says which reading made its marks. The next sync reads every log again, once."""
    agents.syncer().run_once()
    touched = [t for m in agents.library.get(SHOP).messages for t in m.touches]
    assert ("ran", "pytest tests/test_checkout.py -x") in [(t.action, t.target) for t in touched]
    without = [
        c.model_copy(update={"messages": [dataclasses.replace(m, touches=()) for m in c.messages]})
        for c in agents.library.iter_conversations()
    ]
    agents.library.import_conversations(without)
    state = json.loads((agents.library.home / STATE_FILE).read_text())
    del state["reading"]  # as an older pastchats wrote it
    (agents.library.home / STATE_FILE).write_text(json.dumps(state))
    assert not any(m.touches for m in agents.library.get(SHOP).messages)

    report = agents.syncer().run_once()
    assert report.conversations_updated > 0
    assert [t for m in agents.library.get(SHOP).messages for t in m.touches] == touched
    again = agents.syncer().run_once()
    assert (again.files_unchanged, again.conversations_updated) == (7, 0)
