"""The real model's batching: texts are embedded sorted by length, and each vector still lands in its row;
the model's working memory goes back after each batch."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from storage.embedding.embedder import MAX_EMBED_CHARS, EmbedderUnavailable, FastEmbedder, ModelTurns
from storage.embedding.model_files import DEFAULT_MODEL

TEXTS = [
    "Assistant: " + "The reverse proxy forwards requests to the media server on port 8096. " * 12,
    "User: ok",
    "User: how do I feed a sourdough starter that smells of acetone?",
    "Assistant: " + "Raise max_connections in postgresql.conf and restart the pool. " * 4,
]


def test_vectors_come_back_in_the_order_of_the_texts_whatever_their_lengths(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir, batch_size=2)
    together = model.embed_documents(TEXTS)
    alone = np.stack([model.embed_documents([text])[0] for text in TEXTS])
    # Batched by length, padded to each batch's longest: a row's bits do not depend on the batch it
    # ran in, so they are those of the text embedded alone.
    assert np.array_equal(together, alone)
    plain = np.stack(list(model._model.embed(TEXTS, batch_size=4)))
    assert np.array_equal(together, plain / np.linalg.norm(plain, axis=1, keepdims=True))


MEMORY_SCRIPT = """
import sys
from pathlib import Path
from storage.embedding.embedder import FastEmbedder

def resident_mb():
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))

model = FastEmbedder(cache_dir=Path(sys.argv[1]), batch_size=16)
long = [f"Passage {i}: " + "the reverse proxy forwards requests to the media server. " * 40 for i in range(16)]
model.embed_documents(long[:2])
before = resident_mb()
for _ in range(2):
    model.embed_documents(long)
print(resident_mb() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_the_model_gives_back_a_batch_s_working_memory_after_embedding_it(model_cache_dir: Path) -> None:
    # 16 texts of the full 256 word pieces: ~300 MB of activations a batch. The arena keeps that (and
    # doubles it as it grows) unless each run shrinks it: a serving process that embedded waiting
    # passages would stay that much bigger. Measured in a process of its own, as a server is: in the
    # test process, heaps other tests fragmented would be counted too.
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(model_cache_dir)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 100


def test_a_pasted_blob_without_whitespace_is_cut_before_tokenizing(model_cache_dir: Path) -> None:
    model = FastEmbedder(cache_dir=model_cache_dir)
    blob = "QUFBQUFB" * 2_000_000  # 16 MB of base64 that passage splitting cannot cut
    vector = model.embed_documents([blob])[0]
    assert np.allclose(vector, model.embed_documents([blob[:MAX_EMBED_CHARS]])[0], atol=1e-5)


QUERY = "where did we leave the nginx upstream timeouts?"


def batches_done_when_a_query_returns(model: FastEmbedder, texts: list[str]) -> tuple[int, int]:
    """Embed `texts` on a thread and a query once their first model run is under way; how many of the
    document call's runs had ended when the query's vector came back, and how many it made in all."""
    model.prepare_documents_model()
    documents = model._documents  # the int8 copy's sessions, if documents go through them
    owner: Any = model if documents is None else documents
    started, ended = threading.Event(), []
    run = owner._run if documents is None else owner.run

    def counted(*args: Any) -> Any:  # the real run, its end noted
        started.set()
        out = run(*args)
        ended.append(time.perf_counter())
        return out

    setattr(owner, "_run" if documents is None else "run", counted)
    try:
        worker = threading.Thread(target=model.embed_documents, args=(texts,))
        worker.start()
        assert started.wait(30)
        model.embed_query(QUERY)
        returned = time.perf_counter()
        worker.join()
    finally:
        delattr(owner, "_run" if documents is None else "run")
    return sum(1 for at in ended if at <= returned), len(ended)


def test_a_query_waits_for_one_batch_of_documents_not_the_whole_call(model_cache_dir: Path) -> None:
    # The server embeds waiting passages ~500 at a time while it answers searches: a query that
    # waited for the whole call would wait seconds.
    model = FastEmbedder(cache_dir=model_cache_dir, batch_size=2)
    texts = [f"{i}: {TEXTS[0]}" for i in range(16)]  # 8 runs of two long texts
    done, runs = batches_done_when_a_query_returns(model, texts)
    assert runs == 8
    assert done <= 3, f"the query came back after {done} of {runs} document runs"


def test_a_waiting_query_takes_the_model_before_the_next_batch_of_documents() -> None:
    # A plain lock lets the documents' thread take the model straight back after each batch; a query
    # waiting for it must go first, every time, however the threads are scheduled.
    turns = ModelTurns()
    order: list[str] = []
    query_waiting = threading.Event()

    def query() -> None:
        query_waiting.set()
        with turns.queries:
            order.append("query")

    turns.documents.__enter__()
    asker = threading.Thread(target=query)
    asker.start()
    assert query_waiting.wait(10)
    while turns._queries_waiting == 0:  # the query is at the model's door
        time.sleep(0.001)
    order.append("batch 1")
    turns.documents.__exit__(None, None, None)
    with turns.documents:  # the import's next batch
        order.append("batch 2")
    asker.join(10)
    assert order == ["batch 1", "query", "batch 2"]
    with turns.queries:  # and nothing is left held
        pass


def test_a_model_missing_from_the_cache_or_incomplete_there_is_reported_not_installed(
    model_cache_dir: Path, tmp_path: Path
) -> None:
    from storage.embedding.model_files import describe, installed_path

    source = installed_path(describe(DEFAULT_MODEL), model_cache_dir)
    assert source is not None
    broken = tmp_path / "cache"
    snapshot = broken / source.relative_to(model_cache_dir)
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text(snapshot.name, encoding="utf-8")
    for file in source.iterdir():
        if file.name != "tokenizer_config.json":
            (snapshot / file.name).symlink_to(file)
    with pytest.raises(EmbedderUnavailable, match="not installed or incomplete"):
        FastEmbedder(DEFAULT_MODEL, broken)
    with pytest.raises(EmbedderUnavailable, match="not installed or incomplete"):
        FastEmbedder(DEFAULT_MODEL, tmp_path / "empty")


def test_progress_reading_the_run_count_leaves_queries_their_turn(model_cache_dir: Path) -> None:
    # Progress reads how many documents have run while a call embeds them (as `server.services.progress`'s
    # ticker does): the count moves batch by batch, and a query still waits for one batch at most.
    model = FastEmbedder(cache_dir=model_cache_dir, batch_size=2)
    texts = [f"{i}: {TEXTS[0]}" for i in range(16)]
    seen: list[int] = []
    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(0.005):
            seen.append(model.documents_embedded)

    reader = threading.Thread(target=ticker)
    reader.start()
    try:
        done, runs = batches_done_when_a_query_returns(model, texts)
    finally:
        stop.set()
        reader.join()
    assert done <= 3, f"the query came back after {done} of {runs} document runs"
    assert model.documents_embedded == len(texts)
    assert len({count for count in seen if 0 < count < len(texts)}) >= 2, seen
