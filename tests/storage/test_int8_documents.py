"""Documents through an int8 copy of the model derived on this machine; queries through the model itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from storage.embedding import int8_model
from storage.embedding.embedder import FastEmbedder
from storage.embedding.model_files import DEFAULT_MODEL, describe, installed_path
from tests.conftest import CORPUS


def corpus_texts() -> list[str]:
    """40 messages of the realistic corpus from short to long (code, lists, long answers), edge cases."""
    texts = []
    for line in (CORPUS / "chats.jsonl").read_text(encoding="utf-8").splitlines():
        texts += [message["text"] for message in json.loads(line)["messages"]]
    texts.sort(key=len)
    picked = texts[:: max(1, len(texts) // 40)]
    long = " ".join(texts)[:6000]  # far past the 256-token window: truncated
    return [*picked, long, "", "x", "naïve café 東京 🙂", "  spaces  around  "]


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> tuple[FastEmbedder, Path]:
    """An embedder with an int8 copy for documents, derived from the installed model into a new folder."""
    root = tmp_path_factory.mktemp("derived")
    embedder = FastEmbedder(DEFAULT_MODEL, model_cache_dir, derived_dir=root)
    path = embedder.prepare_documents_model()
    assert path is not None, "the int8 copy was not derived"
    return embedder, path


def test_the_int8_copy_is_derived_once_into_its_folder_whole(
    derived: tuple[FastEmbedder, Path], model_cache_dir: Path
) -> None:
    embedder, path = derived
    assert path.is_file()
    assert path.name.startswith(int8_model.RECIPE)
    # Beside it, only the tokenizer files fastembed loads it with: no temporary file left.
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, *int8_model.TOKENIZER_FILES])
    source = installed_path(describe(DEFAULT_MODEL), model_cache_dir)
    assert source is not None
    assert path.stat().st_size < (source / "model.onnx").stat().st_size * 0.8  # int8 weights
    mtime = path.stat().st_mtime_ns
    assert embedder.prepare_documents_model() == path
    assert int8_model.ensure(source / "model.onnx", path, ()) == path  # there already: not made again
    assert path.stat().st_mtime_ns == mtime


def test_documents_are_close_to_float32_and_queries_are_float32_bit_for_bit(
    derived: tuple[FastEmbedder, Path], model_cache_dir: Path
) -> None:
    embedder, _ = derived
    plain = FastEmbedder(DEFAULT_MODEL, model_cache_dir)
    texts = corpus_texts()
    ours, theirs = embedder.embed_documents(texts), plain.embed_documents(texts)
    assert ours.shape == theirs.shape
    assert ours.dtype == np.float32
    assert not np.array_equal(ours, theirs)  # the int8 copy really ran
    cosine = np.sum(ours * theirs, axis=1)
    assert float(np.median(cosine)) > 0.995
    assert float(cosine.min()) > 0.98
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    # A row does not depend on the texts embedded with it.
    assert np.array_equal(embedder.embed_documents(texts[5:9]), ours[5:9])
    for query in ["nginx reverse proxy", texts[3], ""]:
        assert np.array_equal(embedder.embed_query(query), plain.embed_query(query))


def test_a_damaged_copy_falls_back_to_float32_and_is_removed(
    derived: tuple[FastEmbedder, Path], model_cache_dir: Path, tmp_path: Path
) -> None:
    _, good = derived
    cache = model_cache_dir
    damaged = tmp_path / good.relative_to(good.parents[3])
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    fallback = FastEmbedder(DEFAULT_MODEL, cache, derived_dir=tmp_path)
    texts = corpus_texts()[:6]
    assert np.array_equal(fallback.embed_documents(texts), FastEmbedder(DEFAULT_MODEL, cache).embed_documents(texts))
    assert fallback.prepare_documents_model() is None
    assert not damaged.exists()  # the next process derives it again
    again = FastEmbedder(DEFAULT_MODEL, cache, derived_dir=tmp_path)
    assert again.prepare_documents_model() == damaged
    assert damaged.stat().st_size == good.stat().st_size


def test_where_the_copy_cannot_be_made_documents_use_float32(model_cache_dir: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("x", encoding="utf-8")
    embedder = FastEmbedder(DEFAULT_MODEL, model_cache_dir, derived_dir=blocked)
    texts = corpus_texts()[:6]
    assert np.array_equal(
        embedder.embed_documents(texts), FastEmbedder(DEFAULT_MODEL, model_cache_dir).embed_documents(texts)
    )
    assert embedder.prepare_documents_model() is None
    assert blocked.read_text(encoding="utf-8") == "x"


def sessions_of(path: Path, count: int) -> int8_model.DocumentSessions:
    """`count` sessions of the int8 copy in `path`, side by side."""
    return int8_model.DocumentSessions([int8_model.load(path, 384) for _ in range(count)])


def test_sessions_side_by_side_give_each_text_the_bits_one_session_gives(derived: tuple[FastEmbedder, Path]) -> None:
    _, path = derived
    alone, together = sessions_of(path, 1), sessions_of(path, 3)
    texts = corpus_texts() * 3  # more texts than sessions, of every length, in no order
    one = alone.embed(texts)
    three = together.embed(texts)
    assert three.shape == (len(texts), 384)
    assert np.array_equal(one, three)
    assert np.array_equal(together.embed(texts[:2]), one[:2])  # fewer texts than sessions
    assert np.array_equal(together.embed(texts[7:8]), one[7:8])


def test_a_session_that_fails_mid_batch_raises_and_the_next_batch_embeds(derived: tuple[FastEmbedder, Path]) -> None:
    _, path = derived
    sessions = sessions_of(path, 2)
    texts = corpus_texts()
    expected = sessions.embed(texts)

    class Failing:  # a session onnxruntime would fail in (out of memory, a damaged file read late)
        def __init__(self, real: Any) -> None:
            self.real, self.runs = real, 0

        def embed(self, *args: Any, **kwargs: Any) -> Any:
            self.runs += 1
            if self.runs == 3:
                raise RuntimeError("onnxruntime: allocation failed")
            return self.real.embed(*args, **kwargs)

    real = sessions.models[1]
    sessions.models[1] = Failing(real)
    with pytest.raises(RuntimeError, match="allocation failed"):
        sessions.embed(texts)
    sessions.models[1] = real
    assert np.array_equal(sessions.embed(texts), expected)


def test_document_sessions_follow_the_cpus_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(int8_model.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert int8_model.document_sessions() == 2
    monkeypatch.setattr(int8_model.os, "sched_getaffinity", lambda _pid: set(range(64)), raising=False)
    assert int8_model.document_sessions() == int8_model.MAX_DOCUMENT_SESSIONS
    monkeypatch.setattr(int8_model.os, "sched_getaffinity", lambda _pid: {3}, raising=False)
    assert int8_model.document_sessions() == 1


def test_queries_do_not_wait_for_documents_on_the_int8_copy(
    derived: tuple[FastEmbedder, Path], model_cache_dir: Path
) -> None:
    from tests.storage.test_embedder_batching import batches_done_when_a_query_returns

    embedder, _ = derived
    long = "The reverse proxy forwards requests to the media server on port 8096. " * 12
    texts = [f"{i}: {long}" for i in range(12)]
    done, runs = batches_done_when_a_query_returns(embedder, texts)
    assert runs == 12  # one text a run
    assert done <= 4, f"the query came back after {done} of {runs} document runs"


def test_released_sessions_reopen_on_the_next_documents_with_the_same_bits(
    derived: tuple[FastEmbedder, Path], model_cache_dir: Path, tmp_path: Path
) -> None:
    _, path = derived
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    for name in int8_model.TOKENIZER_FILES:
        (tmp_path / name).write_bytes((path.parent / name).read_bytes())
    model = FastEmbedder(DEFAULT_MODEL, model_cache_dir)
    assert model._open_documents(copy, sessions=2)
    texts = corpus_texts()
    first = model.embed_documents(texts)
    model.release_documents_model()
    assert model._documents is None
    assert model.documents_model == copy  # still the copy's vectors, from the next call
    assert np.array_equal(model.embed_documents(texts), first)
    assert len(model._documents.models) == 2
    model.release_documents_model()
    copy.unlink()  # gone meanwhile: the next documents go through the model itself
    plain = FastEmbedder(DEFAULT_MODEL, model_cache_dir)
    assert np.array_equal(model.embed_documents(texts), plain.embed_documents(texts))
    assert model.documents_model is None


def test_an_embedding_pass_releases_the_document_sessions_when_it_ends(model_cache_dir: Path, tmp_path: Path) -> None:
    from storage.library import Library
    from tests.storage.helpers import conversation

    embedder = FastEmbedder(DEFAULT_MODEL, model_cache_dir, derived_dir=tmp_path / "derived")
    library = Library.open(tmp_path / "store", embedder=embedder)
    library.import_conversations(
        [conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."])],
        embed=False,
    )
    assert library.embed_pending() == 3
    assert embedder.documents_model is not None
    assert embedder._documents is None  # closed for the compaction and rebuilds after the pass
    assert "nginx" in [c.uri for c in library.search("jellyfin reverse proxy", max_results=1, mode="vector").chats]
