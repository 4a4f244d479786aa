"""Sync finds OpenCode, Kilo, Qwen Code, Continue, Crush, Goose, Zed, Copilot CLI and Cline's SDK where
they keep their sessions, imports them once, and reindex rebuilds them from its archive with the same
chats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from importers.sources.reindex import Reindexer
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.importers.test_crush import crush_database
from tests.importers.test_goose import goose_database
from tests.importers.test_zed import zed_database

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"


def more_agents_home(home: Path) -> None:
    share = home / ".local" / "share"
    shutil.copytree(FIXTURES / "opencode/real-1.18", share / "opencode")
    shutil.copytree(FIXTURES / "opencode/real-1.1/storage", share / "opencode" / "storage")
    shutil.copytree(FIXTURES / "qwen-code/real-0.15/projects", home / ".qwen" / "projects")
    shutil.copytree(FIXTURES / "continue/shapes/sessions", home / ".continue" / "sessions")
    project = home / "src" / "tool"
    crush_database(FIXTURES, project / ".crush" / "crush.db")
    (share / "crush").mkdir(parents=True)
    entry = {"path": str(project), "data_dir": str(project / ".crush"), "last_accessed": "2026-06-20T09:00:00Z"}
    (share / "crush" / "projects.json").write_text(json.dumps({"projects": [entry]}))
    shutil.copytree(FIXTURES / "goose/sessions", share / "goose" / "sessions")
    goose_database(FIXTURES, share / "goose" / "sessions" / "sessions.db")
    zed_database(FIXTURES, share / "zed" / "threads" / "threads.db")


def test_sync_finds_each_agents_sessions_imports_them_once_and_reindex_rebuilds_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    more_agents_home(home)
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        syncer = Syncer(library, env={}, home=home, formats=["opencode", "opencode-files", "qwen-code", "continue",
                                                               "crush", "goose", "goose-files", "zed"])  # fmt: skip
        report = syncer.run_once()
        chats = {c.id: c for c in library.iter_conversations()}
        again = syncer.run_once()

        assert sorted(Path(f.where).name for f in report.files_failed) == [  # Continue's broken and old sessions
            "8e3f4a5b-6c7d-4e8f-a09b-1c2d3e4f5a6b.json",
            "9f4a5b6c-7d8e-4f9a-b1ac-2d3e4f5a6b7c.json",
        ]
        assert {cid.split(":")[0] for cid in chats} == {"opencode", "qwen-code", "continue", "crush", "goose", "zed"}
        assert len(chats) == 2 + 1 + 2 + 3 + 3 + 2
        assert (again.files_changed, again.conversations_new) == (0, 0)
        assert chats["crush:b7e4c1a2-3d5f-4e6a-8b9c-0d1e2f3a4b5c"].project == str(home / "src/tool")

        shutil.rmtree(home)  # every source gone: the archive is all that is left
        rebuilt = Reindexer(library, home=home).run()
        assert rebuilt.files_failed == []
        assert {c.id: c for c in library.iter_conversations()} == chats
    finally:
        library.close()


def test_sync_finds_kilo_copilot_cli_and_cline_sdk_sessions_once_and_reindex_rebuilds_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "share" / "kilo").mkdir(parents=True)
    shutil.copy(FIXTURES / "kilo/shapes-7.6/kilo.db", home / ".local" / "share" / "kilo" / "kilo.db")
    shutil.copytree(FIXTURES / "copilot-cli/shapes-1.0/session-state", home / ".copilot" / "session-state")
    shutil.copytree(FIXTURES / "cline-sdk/shapes/data", home / ".cline" / "data")
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        syncer = Syncer(library, env={}, home=home, formats=["kilo", "copilot-cli", "cline-sdk"])
        report = syncer.run_once()
        chats = {c.id: c for c in library.iter_conversations()}
        again = syncer.run_once()

        assert [Path(f.where).name for f in report.files_failed] == ["1786000000000_broke.messages.json"]
        assert sorted(cid.split(":")[0] for cid in chats) == ["cline-sdk"] * 3 + ["copilot-cli"] * 2 + ["kilo"] * 2
        assert (again.files_changed, again.conversations_new) == (0, 0)
        assert chats["cline-sdk:1781000000000_abcde"].project == "/home/ana/src/shop"  # from the index

        shutil.rmtree(home)  # every source gone: the archive is all that is left
        rebuilt = Reindexer(library, home=home).run()
        assert rebuilt.files_failed == []  # a file no chat came from was not archived
        assert {c.id: c for c in library.iter_conversations()} == chats
    finally:
        library.close()
