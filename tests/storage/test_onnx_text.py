"""The model loaded without fastembed gives fastembed's vectors, bit for bit, on real text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from storage import onnx_text
from storage.defaults import DEFAULT_MODEL
from storage.embedder import FastEmbedder
from tests.conftest import CORPUS


def corpus_texts() -> list[str]:
    """40 messages of the realistic corpus from short to long (code, lists, long answers), edge cases."""
    texts = []
    for line in (CORPUS / "chats.jsonl").read_text(encoding="utf-8").splitlines():
        texts += [message["text"] for message in json.loads(line)["messages"]]
    texts.sort(key=len)
    picked = texts[:: max(1, len(texts) // 40)]
    long = " ".join(texts)[:6000]  # far past the 256-token window: truncated the same way
    return [*picked, long, "", "x", "naïve café 東京 🙂", "  spaces  around  "]


def test_the_direct_model_embeds_documents_and_queries_exactly_as_fastembed(model_cache_dir: Path) -> None:
    from fastembed import TextEmbedding

    direct = onnx_text.load(DEFAULT_MODEL, model_cache_dir)
    assert direct is not None, "the default model was not found in fastembed's cache layout"
    reference = TextEmbedding(DEFAULT_MODEL, cache_dir=str(model_cache_dir), local_files_only=True)
    texts = corpus_texts()
    assert len(texts) > 40
    for batch_size in (16, 5):  # batches padded to their longest text, as fastembed pads them
        ours = np.stack(list(direct.embed(texts, batch_size=batch_size)))
        theirs = np.stack(list(reference.embed(texts, batch_size=batch_size)))
        assert ours.dtype == theirs.dtype == np.float32
        assert np.array_equal(ours, theirs)
    for query in ["nginx reverse proxy", texts[3], "", "naïve café 東京 🙂"]:
        assert np.array_equal(next(direct.query_embed(query)), next(iter(reference.query_embed(query))))


def test_the_embedder_uses_the_direct_model_for_the_default_and_fastembed_where_the_cache_differs(
    model_cache_dir: Path, tmp_path: Path
) -> None:
    direct = FastEmbedder(DEFAULT_MODEL, model_cache_dir)
    assert isinstance(direct._model, onnx_text.DirectModel)

    # A cache whose hub layout lacks the tokenizer config: fastembed's own loader is asked instead,
    # and reports the model as not installed.
    repo = onnx_text.DIRECT[DEFAULT_MODEL.lower()].repo
    source = onnx_text.snapshot_folder(model_cache_dir, repo, ["model.onnx"])
    assert source is not None
    broken = tmp_path / "cache"
    snapshot = broken / source.relative_to(model_cache_dir)
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text(snapshot.name, encoding="utf-8")
    for file in source.iterdir():
        if file.name != "tokenizer_config.json":
            (snapshot / file.name).symlink_to(file)
    assert onnx_text.load(DEFAULT_MODEL, broken) is None
    with pytest.raises(Exception, match="not installed or incomplete"):
        FastEmbedder(DEFAULT_MODEL, broken)
    assert onnx_text.load("BAAI/bge-small-en-v1.5", model_cache_dir) is None  # not a direct model
