"""Writers that die or race must leave a store with no duplicates, no lost chats and agreeing indexes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from storage.embedding.embedder import HashEmbedder
from storage.library import Library

ROOT = Path(__file__).resolve().parents[2]


def write_source(path: Path, ids: range) -> Path:
    with path.open("w") as handle:
        for i in ids:
            messages = [{"role": "user", "text": f"question {i} about topic{i % 17}"}]
            messages += [{"role": "assistant", "text": f"answer {i} " + "detail " * (i % 50)} for _ in range(3)]
            handle.write(json.dumps({"id": f"c{i}", "title": f"chat {i}", "messages": messages}) + "\n")
    return path


def start_writer(home: Path, source: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = str(ROOT / "tests" / "storage" / "writer_process.py")
    return subprocess.Popen(
        [sys.executable, script, str(home), str(source)], env=env, stdout=subprocess.PIPE, text=True
    )


def assert_consistent(library: Library) -> None:
    store = library.store
    conversation_ids = store.conversations.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
    assert not [k for k, n in Counter(conversation_ids).items() if n > 1], "duplicate conversations"
    chunks = store.chunks.search().select(["id", "conversation_id", "version"]).limit(None).to_arrow().to_pylist()
    chunk_ids = [row["id"] for row in chunks]
    assert len(chunk_ids) == len(set(chunk_ids)), "duplicate chunks"
    chunk_versions: dict[str, set[str]] = {}
    for row in chunks:
        chunk_versions.setdefault(row["conversation_id"], set()).add(row["version"])
    truth = store.versions(conversation_ids)
    metas = library.chats.metas(conversation_ids)  # the read model
    assert set(metas) == set(conversation_ids), "the catalog out of step"
    for cid, meta in metas.items():
        assert meta.version == truth[cid], f"{cid}: the catalog out of step"
        assert chunk_versions.get(cid, set()) == {meta.version}, f"{cid}: chunks out of step"
        assert len(library.get(cid).messages) == meta.message_count
    assert library.keywords.doc_count() == len(chunk_ids)
    assert not library.lock.pending()


@pytest.mark.integration
def test_a_writer_killed_mid_import_leaves_a_store_the_next_open_repairs(tmp_path: Path) -> None:
    home = tmp_path / "store"
    source = write_source(tmp_path / "chats.jsonl", range(1500))
    writer = start_writer(home, source)
    journal = home / "journal.json"
    deadline = time.monotonic() + 120
    while not journal.exists() and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert writer.poll() is None, "the writer finished before it could be killed; make the source larger"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()

    library = Library.open(home, embedder=HashEmbedder())
    assert_consistent(library)
    library.import_conversations(Library.open(home, embedder=HashEmbedder()).iter_conversations())
    from importers.registry import read

    conversations, _ = read(source)
    stats = library.import_conversations(conversations)
    assert stats.new + stats.unchanged == 1500
    assert library.stats().conversations == 1500
    assert_consistent(library)


@pytest.mark.integration
def test_two_processes_importing_the_same_chats_at_once_make_no_duplicates(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder())  # create the tables before the race
    first = start_writer(home, write_source(tmp_path / "a.jsonl", range(300)))
    second = start_writer(home, write_source(tmp_path / "b.jsonl", range(150, 450)))
    outputs = [first.communicate(timeout=240)[0], second.communicate(timeout=240)[0]]
    assert first.returncode == second.returncode == 0, outputs
    library = Library.open(home, embedder=HashEmbedder())
    assert library.stats().conversations == 450
    assert_consistent(library)
