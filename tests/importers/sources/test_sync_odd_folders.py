"""Sync over odd folders: a busy project folder is looked through once per sync, not once per session;
an unreadable session or folder is reported, once; a source rewritten shorter loses nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.performance.sync_scale import PROJECT, write_sessions
from importers import claude_code
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library


@pytest.fixture
def library(tmp_path: Path) -> Library:
    opened = Library.open(tmp_path / "store", embedder=HashEmbedder())
    yield opened
    opened.close()


def test_a_busy_project_folder_is_looked_through_once_per_sync(
    tmp_path: Path, library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    write_sessions(home, 120, 4)
    looked: list[Path] = []
    original = claude_code._folder_summaries

    def counted(folder: Path) -> dict[str, str]:
        looked.append(folder)
        return original(folder)

    monkeypatch.setattr(claude_code, "_folder_summaries", counted)
    report = Syncer(library, env={}, home=home, formats=["claude-code"]).run_once(embed=False)

    assert report.conversations_new == 120
    assert looked == [home / ".claude" / "projects" / PROJECT]
    # Titles still come from the summaries other sessions hold.
    second = library.get("claude-code:5e55e000-0000-4000-8000-000000000001")
    assert second.title == "Session 1 summed up"


def test_a_session_truncated_and_rewritten_keeps_its_history(tmp_path: Path, library: Library) -> None:
    """The agent empties its log and writes one new exchange in place: the archive keeps what the file
    held, and the store keeps the chat's earlier messages beside the new ones."""
    from importers.sources.archive import Archive
    from tests.importers.sources.agent_home import write_session

    home = tmp_path / "home"
    session = "5e55e000-3333-4000-8000-000000000003"
    path = home / ".claude" / "projects" / "-home-ana-src-other" / f"{session}.jsonl"
    earlier = [f"question {i} about the zanzibarite" if i % 2 == 0 else f"answer {i}" for i in range(10)]
    write_session(path, session, earlier)
    syncer = Syncer(library, env={}, home=home, formats=["claude-code"])
    assert syncer.run_once(embed=False).conversations_new == 1
    held = path.read_bytes()

    write_session(path, session, ["a new question about the quetzalcoatlite", "a new answer"])
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    report = syncer.run_once(embed=False)

    assert not report.files_failed
    texts = [m.text for m in library.get(f"claude-code:{session}").messages]
    assert [t for t in texts if t.startswith("question")] == [
        f"question {i} about the zanzibarite" for i in range(0, 10, 2)
    ]
    assert texts[-2:] == ["a new question about the quetzalcoatlite", "a new answer"]
    assert [c.uri for c in library.search("zanzibarite", mode="keyword").chats] == [f"claude-code:{session}"]
    archive = Archive(library.home)
    copy = archive.path(archive.relative_for("claude-code", path))
    assert copy.read_bytes() == path.read_bytes()
    assert [p.read_bytes() for p in copy.parent.glob(f"{copy.name}.earlier-*")] == [held]

    # Synced again unchanged, then grown: the history stays, once.
    assert syncer.run_once(embed=False).conversations_updated == 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write(path.read_text(encoding="utf-8").splitlines(keepends=True)[-1].replace("a new answer", "more"))
    syncer.run_once(embed=False)
    texts = [m.text for m in library.get(f"claude-code:{session}").messages]
    assert texts.count("question 0 about the zanzibarite") == 1
    assert len(list(copy.parent.glob(f"{copy.name}.earlier-*"))) == 1


_SYNC_AS_USER = """
import json, sys
from pathlib import Path
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
library = Library.open(Path(sys.argv[1]), embedder=HashEmbedder())
report = Syncer(library, env={}, home=Path(sys.argv[2]), formats=["claude-code"]).run_once(embed=False)
print(json.dumps({"failed": [[s.where, s.reason] for s in report.files_failed], "new": report.conversations_new}))
"""


def test_an_unreadable_session_is_reported_once_and_an_unreadable_folder_at_all(tmp_path: Path) -> None:
    """Permissions stop what a user may read; root reads past them, so as root the sync runs without
    the capabilities that let it (`setpriv`)."""
    import shutil
    import subprocess
    import sys

    from tests.importers.sources.agent_home import write_session

    projects = tmp_path / "home" / ".claude" / "projects"
    readable = projects / "-home-ana-src-ok" / "5e55e000-4444-4000-8000-000000000001.jsonl"
    secret = projects / "-home-ana-src-ok" / "5e55e000-4444-4000-8000-000000000002.jsonl"
    hidden = projects / "-home-ana-src-closed" / "5e55e000-4444-4000-8000-000000000003.jsonl"
    for path in (readable, secret, hidden):
        write_session(path, path.stem, ["a question", "an answer"])
    command = [sys.executable, "-c", _SYNC_AS_USER, str(tmp_path / "store"), str(tmp_path / "home")]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions would not stop the read")
        caps = "-dac_override,-dac_read_search"
        command = ["setpriv", "--bounding-set", caps, "--inh-caps", caps, *command]
    secret.chmod(0)
    hidden.parent.chmod(0)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[3],
            env={**os.environ, "HOME": str(tmp_path / "home")},
        )
    finally:
        hidden.parent.chmod(0o700)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    failed = [where for where, _ in result["failed"]]
    assert result["new"] == 1
    assert failed.count(str(secret)) == 1, result
    assert [where for where in failed if where.startswith(str(hidden.parent))] == [str(hidden.parent)], result
