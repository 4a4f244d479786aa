"""Old LanceDB versions are deleted only when no reader can still be reading them."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
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


def versions(library: Library) -> list[int]:
    return sorted(int(v["version"]) for v in library.store.chunks.list_versions())


def test_with_a_reader_mid_read_only_versions_superseded_longer_ago_than_the_grace_are_deleted(
    tmp_path: Path,
) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    for i in range(6):
        library.import_conversations([chat(i)])
    with library.store.readers.reading():  # as a search in another thread or process would
        library.import_conversations([chat(6)])
        kept = versions(library)
        assert len(kept) > 1  # what the import superseded moments ago is kept for the reader
        with library.lock.hold():
            library.store.prune(grace=timedelta(0))
        # LanceDB's cleanup call commits a compaction of its own; every version before it is gone.
        assert not set(kept[:-1]) & set(versions(library))
    assert [c.uri for c in library.search("question 3 topic3").chats][:1] == ["c3"]


def test_an_import_with_no_reader_at_work_leaves_only_the_newest_versions_on_disk(tmp_path: Path) -> None:
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    for i in range(6):
        library.import_conversations([chat(i)], embed=False)
    library.embed_pending(batch=1)  # one commit per chat, compacted and cleaned up at the end
    assert len(library.store.chunks.list_versions()) <= 2
    library.import_conversations([chat(i) for i in range(6, 30)])
    for table in (library.store.conversations, library.store.chunks):
        assert len(table.list_versions()) <= 2, table.name  # the newest, and the cleanup's own compaction
    assert library.store.disk_bytes() <= 1.3 * library.store.live_bytes()
    assert [c.uri for c in library.search("question 17 topic3").chats][:1] == ["c17"]


def test_cleanup_sees_a_read_in_another_process_and_no_longer_once_it_ends(tmp_path: Path) -> None:
    home = tmp_path / "store"
    writer = Library.open(home, embedder=HashEmbedder())
    writer.import_conversations([chat(i) for i in range(3)])
    reader = start_reader(home)  # holds its read open
    try:
        with writer.store.readers.alone() as alone:
            assert not alone
    finally:
        out, _ = reader.communicate("go\n", timeout=120)
    assert reader.returncode == 0, out
    with writer.store.readers.alone() as alone:
        assert alone
