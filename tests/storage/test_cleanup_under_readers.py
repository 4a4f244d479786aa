"""Old LanceDB versions are deleted only when no reader can still be reading them."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from storage.embedder import HashEmbedder
from storage.library import Library
from tests.storage.helpers import conversation

ROOT = Path(__file__).resolve().parents[2]


def chat(i: int) -> object:
    return conversation(f"c{i}", [f"question {i} about topic{i % 7}", "answer " + "detail " * 30])


def start_reader(home: Path) -> subprocess.Popen[str]:
    script = str(ROOT / "tests" / "storage" / "reader_process.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, script, str(home)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "reading"
    return process


@pytest.mark.integration
def test_a_reader_in_another_process_reads_to_the_end_while_a_writer_compacts_and_cleans_up(tmp_path: Path) -> None:
    home = tmp_path / "store"
    writer = Library.open(home, embedder=HashEmbedder())
    writer.import_conversations([chat(i) for i in range(40)], embed=False)
    writer.embed_pending(batch=1)  # one commit per chat, no compaction: many small files to rewrite
    total = writer.store.chunk_count()
    reader = start_reader(home)  # stopped after its first row, its query still on the current version
    writer.import_conversations([chat(99)])  # commits, compacts, deletes the versions it may
    with writer.lock.hold():
        writer.store.optimize()
    out, _ = reader.communicate("go\n", timeout=120)
    assert reader.returncode == 0, out
    assert out.strip() == f"read {total}"


def test_versions_superseded_longer_ago_than_the_grace_are_deleted(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    for i in range(6):
        library.import_conversations([chat(i)])
    versions = len(library.store.chunks.list_versions())
    with library.lock.hold():
        library.store.optimize()  # everything was superseded moments ago: kept
    assert len(library.store.chunks.list_versions()) >= versions
    with library.lock.hold():
        library.store.prune(grace=timedelta(0))
    assert len(library.store.chunks.list_versions()) == 1
    assert library.store.disk_bytes() <= 1.3 * library.store.live_bytes()
    assert [c.uri for c in library.search("question 3 topic3").chats][:1] == ["c3"]
