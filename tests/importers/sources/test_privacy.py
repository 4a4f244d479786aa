from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers.sources.privacy import EXCLUDED, Exclusions, delete, forget, unforget
from importers.sources.sync_state import SyncState
from storage.errors import NotFound
from tests.importers.sources.agent_home import (
    CODEX,
    CODEX_FILE,
    SHOP,
    SHOP_FILE,
    AgentHome,
    claude_line,
    make_agent_home,
    write_session,
)

CURSOR_DB = "cursor/globalStorage/state.vscdb"  # passed as an extra path: default locations vary by OS


@pytest.fixture
def agents(tmp_path: Path) -> AgentHome:
    return make_agent_home(tmp_path)


def ids(agents: AgentHome) -> set[str]:
    return {c.id for c in agents.library.iter_conversations()}


def build_cursor_db(path: Path, composers: dict[str, str]) -> None:
    """A Cursor global database holding one two-bubble composer per `{id: user text}`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        for cid, text in composers.items():
            headers = [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2}]
            data = {"composerId": cid, "name": text, "createdAt": 1735725600000, "fullConversationHeadersOnly": headers}
            rows = {
                f"composerData:{cid}": data,
                f"bubbleId:{cid}:b1": {"type": 1, "bubbleId": "b1", "text": text},
                f"bubbleId:{cid}:b2": {"type": 2, "bubbleId": "b2", "text": f"Answer about {text}"},
            }
            connection.executemany(
                "INSERT INTO cursorDiskKV VALUES (?, ?)", [(k, json.dumps(v)) for k, v in rows.items()]
            )
    connection.close()


def test_delete_removes_a_chat_from_search_recent_read_and_the_archive(agents: AgentHome) -> None:
    agents.syncer().run_once()
    archived = agents.archived(SHOP_FILE, "claude-code")
    assert archived.exists()

    assert delete(agents.library, [SHOP, "claude-code:no-such-chat"]) == [SHOP]

    assert SHOP not in [c.uri for c in agents.library.search("checkout rounding", max_results=10).chats]
    assert SHOP not in [c.uri for c in agents.library.recent(n=20).chats]
    with pytest.raises(NotFound):
        agents.library.read_chat(SHOP)
    assert not archived.exists()
    assert agents.archived(CODEX_FILE, "codex").exists()


def test_a_deleted_chat_is_not_brought_back_by_sync_even_when_its_file_grows(agents: AgentHome) -> None:
    agents.syncer().run_once()
    delete(agents.library, [SHOP])
    with agents.path(SHOP_FILE).open("a", encoding="utf-8") as handle:
        handle.write(claude_line("n-1", "a-4", "user", "One more question about rounding"))

    report = agents.syncer().run_once()

    assert SHOP not in ids(agents)
    assert [(p.where, p.reason.split(" (")[0]) for p in report.conversations_skipped] == [
        (SHOP, "deleted by you earlier")
    ]
    assert not agents.archived(SHOP_FILE, "claude-code").exists()
    unforget(agents.library, [SHOP])
    agents.syncer().run_once()
    assert SHOP not in ids(agents)  # the file has not changed since; importing it explicitly brings it back


def test_deleting_one_chat_of_a_shared_database_keeps_the_copy_until_the_last_one_goes(agents: AgentHome) -> None:
    build_cursor_db(agents.path(CURSOR_DB), {"c-1": "Tabs or spaces", "c-2": "Rust lifetimes"})
    agents.syncer(extra_paths=(agents.path(CURSOR_DB),)).run_once()
    archived = agents.archived(CURSOR_DB, "cursor")
    assert {"cursor:c-1", "cursor:c-2"} <= ids(agents)
    assert sqlite3.connect(archived).execute("SELECT count(*) FROM cursorDiskKV").fetchone() == (6,)

    delete(agents.library, ["cursor:c-1"])
    assert archived.exists()
    assert "cursor:c-1" in SyncState.load(agents.library.home).forgotten
    build_cursor_db(agents.path(CURSOR_DB).with_name("new.vscdb"), {"c-1": "Tabs or spaces", "c-2": "Rust lifetimes"})
    agents.path(CURSOR_DB).with_name("new.vscdb").replace(agents.path(CURSOR_DB))
    agents.syncer(extra_paths=(agents.path(CURSOR_DB),)).run_once()
    assert "cursor:c-1" not in ids(agents)

    delete(agents.library, ["cursor:c-2"])
    assert not archived.exists()


def test_forget_by_project_source_or_date(agents: AgentHome) -> None:
    agents.syncer().run_once()
    everything = ids(agents)
    assert forget(agents.library, project="/home/ana/src/api") == 1
    assert ids(agents) == everything - {CODEX}
    assert forget(agents.library, source="gemini") == 2
    assert not any(cid.startswith("gemini:") for cid in ids(agents))
    old = {c.id for c in agents.library.iter_conversations() if c.updated_at < datetime(2025, 2, 1, tzinfo=UTC)}
    assert forget(agents.library, before=datetime(2025, 2, 1, tzinfo=UTC)) == len(old) > 0
    assert ids(agents) == everything - {CODEX} - old - {c for c in everything if c.startswith("gemini:")}
    with pytest.raises(ValueError, match="say what to forget"):
        forget(agents.library)


def test_excluded_projects_paths_and_sources_are_skipped_and_not_archived(agents: AgentHome) -> None:
    exclusions = Exclusions(
        projects=("/home/ana/src/shop",), paths=("~/.codex/archived_sessions/*",), sources=("gemini",)
    )
    report = agents.syncer(exclusions=exclusions).run_once()

    assert ids(agents) == {CODEX, "claude-code:c0ffee00-0000-4000-8000-000000000009"}
    assert [p.reason for p in report.conversations_skipped] == [EXCLUDED, EXCLUDED]  # the shop session and its subagent
    assert report.files_excluded == 1
    assert not agents.archived(SHOP_FILE, "claude-code").exists()

    agents.syncer().run_once()  # exclusions lifted: everything is read again
    assert SHOP in ids(agents)
    assert any(cid.startswith("gemini:") for cid in ids(agents))
    assert agents.archived(SHOP_FILE, "claude-code").exists()


def test_a_chat_holding_the_opt_out_marker_is_never_indexed_or_archived(agents: AgentHome) -> None:
    secret = ".claude/projects/-home-ana-src-other/0ff0ff00-0000-4000-8000-000000000001.jsonl"
    write_session(
        agents.path(secret), "0ff0ff00-0000-4000-8000-000000000001", ["my password\npastchats: do-not-index", "ok"]
    )

    report = agents.syncer().run_once()

    assert "claude-code:0ff0ff00-0000-4000-8000-000000000001" not in ids(agents)
    assert report.files_failed == []
    assert [p.reason for p in report.conversations_skipped] == ["opt-out marker"]
    assert not agents.archived(secret, "claude-code").exists()
