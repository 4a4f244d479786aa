"""A chat of any length is indexed within a fixed memory budget: its passages are derived and written in
slices (`storage.writing.ingest.SLICE_CHUNKS`), with the same rows an ordinary chat gets, and a write cut off
between slices is finished by the next writer without blocking any later import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import storage.writing.ingest as ingest
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.storage.helpers import conversation

ROOT = Path(__file__).resolve().parents[2]
# The import runs under a small launcher that reports the import's peak: a child started straight from
# this test process inherits its peak RSS at exec (Linux keeps the old address space's high-water mark).
LAUNCH = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"""
# Well above what 100,000 messages take now (~0.59 GB) and far below what they took when a chat was indexed
# whole (~1.96 GB): a regression to holding the whole chat's passages fails here. (A million messages:
# docs/BENCHMARKS.md; 100,000 keep the test under a minute.)
MESSAGES = 100_000
PEAK_MIB = 1024


def long_chat(cid: str, count: int) -> list[str]:
    return [f"message {i} about topic{i % 97} and the {('queue', 'cache', 'index')[i % 3]}" for i in range(count)]


def chunk_rows(library: Library, cid: str) -> dict[str, tuple[object, ...]]:
    columns = ["id", "kind", "first_index", "last_index", "embed_key", "pending", "version", "vector"]
    table = library.store.chunks.search().where(f"conversation_id = '{cid}'").select(columns).limit(None).to_arrow()
    rows = table.to_pylist()
    return {r["id"]: (r["kind"], r["first_index"], r["last_index"], r["embed_key"], r["pending"], r["version"],
                      tuple(np.round(np.asarray(r["vector"]), 5))) for r in rows}  # fmt: skip


@pytest.mark.parametrize("embed", [True, False])
def test_a_chat_derived_in_slices_gets_the_rows_it_gets_whole(tmp_path, monkeypatch, embed):
    texts = long_chat("long", 230)
    whole = Library.open(tmp_path / "whole", embedder=HashEmbedder())
    whole.import_conversations([conversation("long", texts)], embed=embed)
    monkeypatch.setattr(ingest, "SLICE_MESSAGES", 50)
    monkeypatch.setattr(ingest, "SLICE_CHUNKS", 40)  # windows whose members sit in the slice before
    sliced = Library.open(tmp_path / "sliced", embedder=HashEmbedder())
    sliced.import_conversations([conversation("long", texts)], embed=embed)
    assert chunk_rows(sliced, "long") == chunk_rows(whole, "long")
    assert sliced.keywords.doc_count() == whole.keywords.doc_count()
    assert [c.uri for c in sliced.search("topic41 cache").chats][:1] == ["long"]
    if not embed:  # embedding what waits, slice by slice, gives the vectors an embedding import gives
        assert sliced.embed_pending() == whole.embed_pending()
        assert chunk_rows(sliced, "long") == chunk_rows(whole, "long")


def test_a_changed_long_chat_keeps_no_passage_of_its_old_version(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "SLICE_MESSAGES", 50)
    monkeypatch.setattr(ingest, "SLICE_CHUNKS", 40)
    library = Library.open(tmp_path / "home", embedder=HashEmbedder())
    library.import_conversations([conversation("long", long_chat("long", 200))])
    shorter = long_chat("long", 120)
    shorter[7] = "a reworded message about the zeppelin"
    library.import_conversations([conversation("long", shorter)])
    rows = chunk_rows(library, "long")
    assert {row[5] for row in rows.values()} == {library.store.versions(["long"])["long"]}
    assert max(row[2] for row in rows.values()) == 119
    assert library.keywords.doc_count() == len(rows)
    assert [c.uri for c in library.search("zeppelin").chats] == ["long"]


def test_a_long_chat_cut_off_between_slices_blocks_no_later_import(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "SLICE_MESSAGES", 50)
    monkeypatch.setattr(ingest, "SLICE_CHUNKS", 40)
    home = tmp_path / "home"
    library = Library.open(home, embedder=HashEmbedder())
    written = library.store.add_derived
    calls = []

    def dies_on_the_third_slice(*args, **kwargs):  # as a killed import would: some slices are committed
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        written(*args, **kwargs)

    monkeypatch.setattr(library.store, "add_derived", dies_on_the_third_slice)
    with pytest.raises(KeyboardInterrupt):
        library.import_conversations([conversation("long", long_chat("long", 200))])
    assert library.lock.pending() == ["long"]
    library.close()

    later = Library.open(home, embedder=HashEmbedder())
    later.import_conversations([conversation("after", ["the chat after the long one", "imported too"])])
    assert not later.lock.pending()
    rows = chunk_rows(later, "long")
    assert max(row[2] for row in rows.values()) == 199, "the long chat's passages were finished"
    assert later.keywords.doc_count() == len(rows) + len(chunk_rows(later, "after"))
    assert [c.uri for c in later.search("the chat after").chats][:1] == ["after"]


@pytest.mark.integration
def test_a_chat_of_100k_messages_imports_within_a_fixed_memory_budget(tmp_path):
    source = tmp_path / "long.jsonl"
    with source.open("w", encoding="utf-8") as out:
        out.write('{"id": "long", "title": "a long chat", "updated_at": "2025-01-01T00:00:00Z", "messages": [')
        for i in range(MESSAGES):
            role = "user" if i % 2 == 0 else "assistant"
            out.write(("," if i else "") + json.dumps({"role": role, "text": f"message {i} about topic {i % 977}"}))
        out.write("]}\n")
        out.write(json.dumps({"id": "after", "messages": [{"role": "user", "text": "the chat after it"}]}) + "\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PASTCHATS_")}
    env |= {"PASTCHATS_SYNC": "false", "PASTCHATS_MODEL_CACHE": str(tmp_path / "no-models")}
    command = [sys.executable, "-m", "server.cli", "--home", str(tmp_path / "home"), "import", str(source)]
    done = subprocess.run([sys.executable, "-c", LAUNCH, *command], cwd=ROOT, env=env, capture_output=True, text=True)
    *output, last = done.stdout.rstrip("\n").split("\n")
    status, peak_kib = (int(value) for value in last.split())
    assert status == 0, done.stdout + done.stderr
    assert "2 new" in "\n".join(output), done.stdout
    assert f"{MESSAGES + 1} messages" in "\n".join(output), done.stdout
    peak_mib = peak_kib / 1024
    assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib:.0f} MiB importing one chat of {MESSAGES:,} messages"
