"""Sync finds Amazon Q Developer CLI, Kiro CLI, pi, Kimi CLI and OpenHands where they keep their
sessions, imports them once, follows an appended turn, and reindex rebuilds them from its archive."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from importers.sources.reindex import Reindexer
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.importers.test_amazon_q import amazon_q_database

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"
FORMATS = ["amazon-q", "kiro-cli", "pi", "kimi-cli", "kimi-code", "openhands", "openhands-v0"]


def new_agents_home(home: Path) -> None:
    share = home / ".local" / "share"
    amazon_q_database(FIXTURES, share / "amazon-q" / "data.sqlite3")
    amazon_q_database(FIXTURES, share / "kiro-cli" / "data.sqlite3", "amazon-q/kiro-rows.json")
    shutil.copytree(FIXTURES / "pi/sessions", home / ".pi" / "agent" / "sessions")
    shutil.copytree(FIXTURES / "kimi-cli/.kimi", home / ".kimi")
    shutil.copytree(FIXTURES / "kimi-code/.kimi-code", home / ".kimi-code")
    shutil.copytree(FIXTURES / "openhands/.openhands", home / ".openhands")
    shutil.copytree(FIXTURES / "openhands-v0/.openhands", home / ".openhands", dirs_exist_ok=True)
    for file in home.rglob("*"):  # written long ago: a last line cut off is not one being written now
        os.utime(file, (1_700_000_000, 1_700_000_000))


def test_sync_finds_the_new_agents_follows_them_and_reindex_rebuilds_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    new_agents_home(home)
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    try:
        syncer = Syncer(library, env={}, home=home, formats=FORMATS)
        report = syncer.run_once()
        chats = {c.id: c for c in library.iter_conversations()}
        again = syncer.run_once()

        assert sorted(Path(f.where).parent.name for f in report.files_failed) == [  # nothing was said in them
            "--home-ana--",
            "0e0e0e0e0e0e4e0e8e0e0e0e0e0e0e0e",
        ]
        counts = {"amazon-q": 4, "kiro-cli": 2, "pi": 3, "kimi-cli": 4, "kimi-code": 2}
        counts |= {"openhands": 2, "openhands-v0": 2}
        assert sorted(cid.split(":")[0] for cid in chats) == sorted(f for f, n in counts.items() for _ in range(n))
        assert (again.files_changed, again.conversations_new, again.conversations_updated) == (0, 0, 0)
        assert chats["kimi-cli:2b7e4c1a-9d3f-4e6a-8b5c-1d2e3f4a5b6c"].project == "/home/ana/src/shop"

        pi = next((home / ".pi/agent/sessions/--home-ana-src-blog--").glob("*.jsonl"))
        turn = {"type": "message", "timestamp": "2025-10-20T14:05:00.000Z",
                "message": {"role": "user", "content": "and the Atom feed?", "timestamp": 1760969100000}}  # fmt: skip
        with pi.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(turn) + "\n")
        os.utime(pi, (1_700_000_100, 1_700_000_100))
        grown = syncer.run_once()
        blog = next(c for c in library.iter_conversations() if c.id == "pi:5b7c9d1e-2f3a-4b5c-8d6e-7f8091a2b3c4")
        assert (grown.files_grown, grown.conversations_new, grown.conversations_updated) == (1, 0, 1)
        assert blog.messages[-1].text == "and the Atom feed?"
        chats = {c.id: c for c in library.iter_conversations()}

        shutil.rmtree(home)  # every source gone: the archive is all that is left
        rebuilt = Reindexer(library, home=home).run()
        assert rebuilt.files_failed == []
        assert {c.id: c for c in library.iter_conversations()} == chats  # dated as they were too
    finally:
        library.close()
