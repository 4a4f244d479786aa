"""fastembed's own model files, run without importing fastembed: how the server loads its model fast.

`import fastembed` costs 1.0-1.3 s on a quiet 2-core machine (and ~27 MB), nearly all of it modules
an offline load from the cache never runs: the model hub's client (httpx, requests), image models
(PIL), progress bars. The serving process spends that before its first search. For the models listed
in `DIRECT`, the same files are loaded here with the same two libraries fastembed drives (tokenizers,
onnxruntime), set up as fastembed sets them up (truncation, padding, special tokens, session options;
one allocation option added, which changes no vector), and pooled the same way; a test compares the
vectors with fastembed's `TextEmbedding` on real text. Any other model, or a cache this does not
recognise, goes through fastembed itself.

Memory: onnxruntime's CPU arena is on, and every run asks it to give back what the run no longer
holds (`memory.enable_memory_arena_shrinkage`). With the arena off, each operator's output is its own
allocation: tens of MB a batch of activations mapped, faulted in and unmapped operator by operator,
which took about as much kernel time as the model's own arithmetic. The arena serves a run's
activations from a few regions reused within the run; shrinking at its end returns them, so resident
memory after a run is what it was before (a serving process keeps its RSS), and a long import's peak
is one batch's working set, not a high-water mark that grows. docs/BENCHMARKS.md "Import", seventh session.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from storage.defaults import DEFAULT_MODEL

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Direct:
    repo: str  # the Hugging Face repository fastembed installs it from (the cache folder's name)
    model_file: str
    # The matrix products an int8 copy for documents keeps in float32 (`storage.int8_model`): those
    # whose quantisation alone moves the vectors most, measured node by node on realistic passages.
    # None: the model has no int8 copy.
    int8_keep_float: tuple[str, ...] | None = None


# Models whose fastembed pipeline is tokenize, run, mean-pool over the attention mask, normalise
# (fastembed's `PooledNormalizedEmbedding`), in one ONNX file without external data.
DIRECT = {
    DEFAULT_MODEL.lower(): Direct(
        "Qdrant/all-MiniLM-L6-v2-onnx",
        "model.onnx",
        int8_keep_float=(
            # the feed-forward output of the first three layers, then the next two by sensitivity
            "/m/encoder/layer.0/output/dense/MatMul",
            "/m/encoder/layer.1/output/dense/MatMul",
            "/m/encoder/layer.2/output/dense/MatMul",
            "/m/encoder/layer.4/attention/self/value/MatMul",
            "/m/encoder/layer.1/intermediate/dense/MatMul",
        ),
    )
}
# A document model whose vectors of these texts are further than this from the float32 model's
# (cosine) is not used: a quantisation gone wrong, or a file that is not what it claims.
INT8_MIN_COSINE = 0.98
INT8_PROBES = (
    "User: how do I make the nginx reverse proxy keep the Host header when it forwards to the app?",
    "def parse(path):\n    with open(path) as f:\n        return json.load(f)",
    "We agreed to meet on 14 March 2023 to review the migration plan and the budget.",
)


# At most this many sessions of the int8 copy embed documents at once, one text each, one thread each.
MAX_DOCUMENT_SESSIONS = 4


def document_sessions() -> int:
    """How many single-threaded sessions of the int8 copy embed documents side by side: one per CPU
    this process may run on, up to `MAX_DOCUMENT_SESSIONS`.

    One text is a small run: onnxruntime splitting it over two threads finished it only ~1.1x sooner
    than one thread, for ~1.3x the CPU time (operator by operator, each thread waits for the other).
    Two single-threaded sessions, each on its own text, embed ~1.75x as many texts a second as one
    session with two threads, with the same bits (docs/BENCHMARKS.md "Round nine")."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DOCUMENT_SESSIONS))


def snapshot_folder(cache_dir: Path, repo: str, files: Sequence[str]) -> Path | None:
    """The hub-layout snapshot (`models--org--repo/snapshots/<refs/main>`) holding `files`, or None."""
    folder = cache_dir / ("models--" + repo.replace("/", "--"))
    try:
        revision = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    snapshot = folder / "snapshots" / revision
    return snapshot if revision and all((snapshot / name).is_file() for name in files) else None


def _context(config: dict[str, Any]) -> int | None:
    """The stricter of the tokenizer config's limits that is a real one (as fastembed chooses)."""
    limits = [
        value
        for value in (config.get("model_max_length"), config.get("max_length"))
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= sys.maxsize
    ]
    return min(limits) if limits else None


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


class DirectModel:
    """One model's tokenizer and ONNX session; `embed` and `query_embed` as fastembed's text models.

    `use_for_documents` adds sessions of an int8 copy of the model that `embed_documents` runs instead
    (`document_sessions()` of them, one thread each, side by side); `embed` and `query_embed` always
    run the model itself."""

    def __init__(self, folder: Path, model_file: str, *, memory_arena: bool = True):
        from tokenizers import AddedToken, Tokenizer

        self.folder, self.model_file = folder, model_file

        config = _read_json(folder / "config.json")
        tokenizer_config = _read_json(folder / "tokenizer_config.json")
        context = _context(tokenizer_config)
        if context is None:
            raise ValueError(f"no usable maximum context length in {folder / 'tokenizer_config.json'}")
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        truncation = tokenizer.truncation or {}
        side = tokenizer_config.get("truncation_side") or truncation.get("direction", "right")
        tokenizer.enable_truncation(max_length=context, direction=side)
        for value in _read_json(folder / "special_tokens_map.json").values():
            for token in value if isinstance(value, list) else [value]:
                if isinstance(token, str):
                    tokenizer.add_special_tokens([token])
                elif isinstance(token, dict):
                    tokenizer.add_special_tokens([AddedToken(**token)])
        padding = tokenizer.padding or {}
        pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
        pad_id = padding.get("pad_id", config.get("pad_token_id"))
        if pad_id is None and pad_token is not None:
            pad_id = tokenizer.token_to_id(pad_token)
        if pad_token is None or pad_id is None:
            raise ValueError(f"no pad token for the model in {folder}")
        tokenizer.enable_padding(
            direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
            pad_id=pad_id,
            pad_type_id=padding.get("pad_type_id", 0),
            pad_token=pad_token,
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            length=None,
        )
        self._tokenizer = tokenizer
        # The same tokenizer without padding: each text's own length in word pieces, to batch by it.
        self._lengths = Tokenizer.from_str(tokenizer.to_str())
        self._lengths.no_padding()
        self._memory_arena = memory_arena
        self._session = self._open(folder / model_file)
        self._documents: list[Any] = []
        self._documents_path: Path | None = None
        self._tokenizers: list[Any] = []
        self._document_sessions = 0
        self._workers: ThreadPoolExecutor | None = None
        self._documents_busy = threading.Lock()
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._run_options = None
        if memory_arena:
            import onnxruntime as ort

            # Regions the run no longer uses go back at its end (the arena otherwise keeps its
            # high-water mark, doubling as it grows: 1.06 GB after 568 passages at batch 32).
            self._run_options = ort.RunOptions()
            self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def _open(self, path: Path, threads: int = 0) -> Any:
        """A session of the model in `path`; `threads`: its pool's size (0: onnxruntime's choice, a
        thread per physical core)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.enable_cpu_mem_arena = self._memory_arena
        # Initializers from the device allocator, not planned into the session's buffers: -12 MB resident
        # at load (docs/BENCHMARKS.md "Memory"), and the same vectors.
        options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
        # onnxruntime's pool threads spin after each run by default, holding a core the search's keyword
        # leg needs; blocked instead, a search took ~0.85x the time (docs/BENCHMARKS.md, round five).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])

    def use_for_documents(self, path: Path, sessions: int | None = None) -> bool:
        """Embed documents with the model in `path` (the int8 copy) from now on, if it loads, takes the
        same inputs and embeds the probe texts within `INT8_MIN_COSINE` of this model; False if not.
        `sessions`: how many single-threaded sessions run side by side (default `document_sessions()`;
        a single one keeps onnxruntime's own thread count)."""
        from tokenizers import Tokenizer

        count = document_sessions() if sessions is None else max(1, sessions)
        try:
            opened = [self._open(path, 1 if count > 1 else 0) for _ in range(count)]
            if {node.name for node in opened[0].get_inputs()} != self._inputs:
                raise ValueError("its inputs differ from the model's")
            probes = list(INT8_PROBES)
            cosine = np.sum(self._batch(probes, opened[0]) * self._batch(probes), axis=1)
            if not np.all(cosine >= INT8_MIN_COSINE):
                raise ValueError(f"its vectors are too far from the model's (cosine {cosine.min():.3f})")
        except Exception as exc:  # onnxruntime raises its own kinds on a damaged file
            log.warning("not using %s for documents: %s", path, exc)
            return False
        self._documents, self._documents_path, self._document_sessions = opened, path, count
        # A tokenizer of its own for each session's thread (the bindings check borrows at run time):
        # documents share nothing with queries, which run meanwhile.
        self._tokenizers = [Tokenizer.from_str(self._tokenizer.to_str()) for _ in opened]
        if count > 1 and self._workers is None:
            self._workers = ThreadPoolExecutor(max_workers=count, thread_name_prefix="pastchats-embed")
        return True

    def release_documents(self) -> None:
        """Close the int8 copy's sessions (~70 MB each, resident) until documents are embedded again,
        when they reopen from the same file: an import holds them through its embedding, not through
        the compaction and rebuilds after it, where its memory peaks."""
        with self._documents_busy:
            self._documents, self._tokenizers = [], []

    def _reopen_documents(self) -> None:
        path = self._documents_path
        if path is not None and not self._documents and not self.use_for_documents(path, self._document_sessions):
            self._documents_path = None  # gone or damaged since: documents go through the model itself

    @property
    def documents_model(self) -> Path | None:
        """The file of the int8 copy `embed_documents` runs, or None (the model itself)."""
        return self._documents_path

    def _batch(self, texts: list[str], session: Any = None, tokenizer: Any = None) -> npt.NDArray[np.float32]:
        encoded = (tokenizer or self._tokenizer).encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = (session or self._session).run(None, feed, self._run_options)[0]
        # Mean over the real tokens, summed in float64, then normalised, then cast back (fastembed's order).
        summed = np.sum(tokens, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        out: npt.NDArray[np.float32] = (pooled / norms).astype(tokens.dtype, copy=False)
        return out

    def embed(self, texts: Sequence[str], batch_size: int = 256) -> Iterator[npt.NDArray[np.float32]]:
        for start in range(0, len(texts), batch_size):
            yield from self._batch(list(texts[start : start + batch_size]))

    def embed_documents(
        self, texts: Sequence[str], batch_size: int, lock: AbstractContextManager[Any] | None = None
    ) -> npt.NDArray[np.float32]:
        """One row per text, in the order given; batched by length in word pieces, so that a batch,
        padded to its longest text, carries little padding (a row does not depend on its batch: the
        same bits as `embed`, as fastembed's). With an int8 copy (`use_for_documents`): one text a run.

        `lock` is held for each run of the model itself (the session queries share), not for the whole
        call: a query waits for one batch, not for hundreds of passages. The int8 copy's sessions are
        the documents' own and run without it. Calls embedding documents run one at a time."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._documents_busy:
            return self._embed_documents(texts, batch_size, lock or nullcontext())

    def _embed_documents(
        self, texts: Sequence[str], batch_size: int, lock: AbstractContextManager[Any]
    ) -> npt.NDArray[np.float32]:
        self._reopen_documents()
        if self._documents:
            # One text a run: int8 activations are quantised with one scale per run, so a text's vector
            # would depend on the texts (and padding) batched with it; alone it does not, its scale fits
            # it alone (closer to float32), and no padding is computed. Cheaper too: ~0.7x the CPU time
            # of length-sorted batches of 16 (no large per-batch buffers to map and give back).
            return self._each_alone(texts)
        lengths = [len(encoding.ids) for encoding in self._lengths.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        batches = []
        for start in range(0, len(order), batch_size):
            with lock:
                batches.append(self._batch([texts[i] for i in order[start : start + batch_size]]))
        rows = np.concatenate(batches)
        out = np.empty_like(rows)
        out[np.asarray(order, dtype=np.intp)] = rows
        return out

    def _each_alone(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Every text through the int8 copy on its own; with several sessions, each session's thread
        takes the next text not yet taken (texts differ in length, so no fixed share), and writes its
        row in place. A row is the same bits whichever session runs it."""
        if len(self._documents) == 1 or len(texts) == 1 or self._workers is None:
            session, tokenizer = self._documents[0], self._tokenizers[0]
            return np.concatenate([self._batch([text], session, tokenizer) for text in texts])
        rows: list[npt.NDArray[np.float32] | None] = [None] * len(texts)
        taken = iter(range(len(texts)))
        lock = threading.Lock()
        failed = threading.Event()  # one session's error stops the others taking more texts

        def work(session: Any, tokenizer: Any) -> None:
            while not failed.is_set():
                with lock:
                    index = next(taken, None)
                if index is None:
                    return
                try:
                    rows[index] = self._batch([texts[index]], session, tokenizer)
                except BaseException:
                    failed.set()
                    raise

        pairs = list(zip(self._documents, self._tokenizers, strict=True))[: len(texts)]
        runs = [self._workers.submit(work, session, tokenizer) for session, tokenizer in pairs]
        for run in runs:
            run.result()  # re-raises a session's error here
        return np.concatenate(rows)  # type: ignore[arg-type]

    def query_embed(self, text: str) -> Iterator[npt.NDArray[np.float32]]:
        yield from self._batch([text])


def load(model_name: str, cache_dir: Path | None) -> DirectModel | None:
    """The model loaded directly, or None where fastembed must load it (another model, another layout)."""
    direct = DIRECT.get(model_name.lower())
    if direct is None or cache_dir is None:
        return None
    files = [direct.model_file, "tokenizer.json", "tokenizer_config.json"]
    folder = snapshot_folder(cache_dir, direct.repo, files)
    return None if folder is None else DirectModel(folder, direct.model_file)
