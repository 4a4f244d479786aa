"""Text embeddings behind a small protocol: the real fastembed model, or a small deterministic one for tests."""

from __future__ import annotations

import ctypes
import hashlib
import logging
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:  # NumPy is imported where vectors are made: reads of the catalog need none
    import numpy as np
    import numpy.typing as npt

from storage.embedding.model_files import (
    DEFAULT_MODEL,
    ModelError,
    describe,
    install_hint,
    installed_path,
    route_fastembed_logs,
)
from storage.errors import EmbedderUnavailable

__all__ = ["DEFAULT_MODEL", "Embedder", "EmbedderUnavailable", "FastEmbedder", "HashEmbedder", "Vectors"]

Vectors: TypeAlias = "npt.NDArray[np.float32]"  # a string: NumPy is imported where vectors are made
log = logging.getLogger(__name__)
QUERY_CACHE = 256  # query vectors kept (1.5 KB each)

# The model reads at most 256 word pieces; a word piece is rarely over 16 characters, and a "word" of
# over 100 characters is read as one unknown piece. Cutting longer texts first spares the tokenizer a
# pasted blob without whitespace (which passage splitting cannot cut) and changes the embedding of no ordinary text.
MAX_EMBED_CHARS = 256 * 16


class Embedder(Protocol):
    @property
    def model_name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised row per text."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One L2-normalised vector (1-D)."""
        ...


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_contained = False


def contain_malloc() -> None:
    """Keep glibc's malloc from holding on to the model's freed working memory (idempotent).

    Each batch allocates tens of MB of activations and frees them. glibc raises its mmap threshold
    after such a free, so later buffers come from heaps that do not shrink, one heap per onnxruntime
    thread. A fixed threshold serves large buffers from mmap, returned at free; fewer heaps bound the
    rest. No-op where the C library is not glibc.
    """
    global _contained
    if _contained or not sys.platform.startswith("linux"):
        return
    _contained = True
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: nothing to tune
        return
    mallopt(_M_MMAP_THRESHOLD, 1 << 20)
    mallopt(_M_TRIM_THRESHOLD, 8 << 20)
    mallopt(_M_ARENA_MAX, 2)


class ModelTurns:
    """Turns at the model's session: a query waiting for one goes before the next batch of documents.

    A plain lock is not fair: the thread embedding an import's passages gives it back after a batch
    and, running, usually takes it again before a waiting query's thread wakes, so a search could wait
    for the whole call (seen under load: 8 of 8 batches). `queries` and `documents` are reusable
    context managers; a document batch starts only while no query holds or awaits the model."""

    def __init__(self) -> None:
        self._turn = threading.Condition(threading.Lock())
        self._held = False
        self._queries_waiting = 0
        self.queries = _Turn(self._take_for_query, self._give_back)
        self.documents = _Turn(self._take_for_documents, self._give_back)

    def _take_for_query(self) -> None:
        with self._turn:
            self._queries_waiting += 1
            try:
                while self._held:
                    self._turn.wait()
            finally:
                self._queries_waiting -= 1
            self._held = True

    def _take_for_documents(self) -> None:
        with self._turn:
            while self._held or self._queries_waiting:
                self._turn.wait()
            self._held = True

    def _give_back(self) -> None:
        with self._turn:
            self._held = False
            self._turn.notify_all()


class _Turn:
    def __init__(self, take: Callable[[], None], give_back: Callable[[], None]) -> None:
        self._take, self._give_back = take, give_back

    def __enter__(self) -> None:
        self._take()

    def __exit__(self, *exc: object) -> None:
        self._give_back()


def _normalise(matrix: Vectors) -> Vectors:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = (matrix / norms).astype(np.float32)
    return normalised


class FastEmbedder:
    """A fastembed text model, loaded once, used from any thread; documents optionally through an
    int8 copy of it (`storage.embedding.int8_model`).

    onnxruntime's memory arena is off: fastembed cannot ask it to shrink after a run, and kept, it
    holds a batch's high-water mark (doubling as it grows: 1.06 GB after 568 passages at batch 32);
    `contain_malloc` returns the freed buffers instead.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        batch_size: int = 16,
        *,
        derived_dir: Path | None = None,
    ):
        """`derived_dir`: where an int8 copy of the model for documents is kept (`storage.embedding.int8_model`),
        derived there on the first `embed_documents` if it is not; None: documents use the model itself."""
        self._model_name = model_name
        self._cache_dir = cache_dir
        self._batch_size = batch_size
        self._turns = ModelTurns()  # the float32 model's: queries go before the next batch of documents
        self._derived_dir = derived_dir
        self._documents_lock = threading.Lock()  # deriving and checking the int8 copy
        self._documents_busy = threading.Lock()  # calls embedding documents run one at a time
        self._documents_ready = derived_dir is None
        self._documents_path: Path | None = None
        self._documents: Any = None  # the int8 copy's `DocumentSessions` while open
        self._document_sessions = 0
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._embedded = 0  # documents run so far: progress reads it while a call embeds a batch
        self._embedded_lock = threading.Lock()  # the int8 sessions count from their own threads
        contain_malloc()
        self._model: Any = self._load(model_name, cache_dir)
        self._dim = int(self.embed_query("dimension probe").shape[0])

    @staticmethod
    def _load(model_name: str, cache_dir: Path | None) -> Any:
        route_fastembed_logs()
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {"model_name": model_name, "enable_cpu_mem_arena": False}
        if cache_dir is not None:
            kwargs["cache_dir"] = str(cache_dir)
        try:
            # Only ever from the cache: a download is `pastchats model install`'s job. Offline, an
            # implicit download attempt here would retry for ~40 s before failing.
            return TextEmbedding(**kwargs, local_files_only=True)
        except Exception as exc:  # fastembed raises many kinds: missing files, unknown model, broken cache
            where = f" from {cache_dir}" if cache_dir is not None else ""
            raise EmbedderUnavailable(
                f"cannot load embedding model {model_name}{where}: not installed or incomplete "
                f"(install it with {install_hint(model_name)})"
            ) from exc

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def documents_embedded(self) -> int:
        """How many document texts this embedder has run, counted text by text (int8 copy) or batch by
        batch (the model itself) while `embed_documents` works: progress within a call, read from another
        thread. Counting takes no turn at the model, so queries keep theirs."""
        return self._embedded

    def _count(self, texts: int = 1) -> None:
        with self._embedded_lock:
            self._embedded += texts

    @property
    def documents_model(self) -> Path | None:
        """The file of the int8 copy documents are embedded with, or None (the model itself)."""
        return self._documents_path

    def prepare_documents_model(self) -> Path | None:
        """Load (deriving it first if needed) the int8 copy documents are embedded with; its file, or
        None where documents use the model itself (no `derived_dir`, another model, or it failed)."""
        with self._documents_lock:  # not the model's turns: queries go on while the file is derived
            if not self._documents_ready:
                self._documents_ready = True
                path = self._derive_documents_model()
                if path is not None and not self._open_documents(path):
                    path.unlink(missing_ok=True)  # damaged: derived again by the next process
        return self._documents_path

    def _derive_documents_model(self) -> Path | None:
        from storage.embedding import int8_model

        keep_float = int8_model.KEEP_FLOAT.get(self._model_name.lower())
        if keep_float is None or self._cache_dir is None or self._derived_dir is None:
            return None
        info = describe(self._model_name)
        snapshot = installed_path(info, self._cache_dir)
        if snapshot is None:
            return None
        source = snapshot / info.files[0]
        try:
            target = int8_model.derived_file(self._derived_dir, info.repo, snapshot.name, source, keep_float)
            path = int8_model.ensure(source, target, keep_float)
            return None if path is None else int8_model.with_tokenizer(path, snapshot)
        except OSError as exc:
            log.debug("no int8 document model for %s: %s", self._model_name, exc)
            return None

    def _open_documents(self, path: Path, sessions: int | None = None) -> bool:
        """Embed documents with the int8 copy in `path` from now on, if it loads and embeds the probe
        texts within `MIN_COSINE` of the model itself; False if not. `sessions`: how many run side by
        side (default `document_sessions()`)."""
        import numpy as np

        from storage.embedding import int8_model

        count = int8_model.document_sessions() if sessions is None else max(1, sessions)
        try:
            documents = int8_model.DocumentSessions([int8_model.load(path, self._dim) for _ in range(count)])
            probes = list(int8_model.PROBES)
            cosine = np.sum(_normalise(documents.embed(probes)) * self._float32_documents(probes), axis=1)
            if not np.all(cosine >= int8_model.MIN_COSINE):
                raise ValueError(f"its vectors are too far from the model's (cosine {cosine.min():.3f})")
        except Exception as exc:  # fastembed and onnxruntime raise their own kinds on a damaged file
            log.warning("not using %s for documents: %s", path, exc)
            return False
        documents.on_run = self._count  # from here on: the probes above were no one's documents
        self._documents, self._documents_path, self._document_sessions = documents, path, count
        return True

    def release_documents_model(self) -> None:
        """Free the int8 copy's sessions (~70 MB each, resident) until the next `embed_documents`, which
        reopens them from the same file: an import holds them through its embedding, not through the
        compaction and rebuilds after it, where its memory peaks."""
        with self._documents_busy:
            if self._documents is not None:
                self._documents.close()
            self._documents = None

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        cut = [text[:MAX_EMBED_CHARS] for text in texts]
        if not self._documents_ready:
            self.prepare_documents_model()
        with self._documents_busy:
            path = self._documents_path
            if path is not None and self._documents is None and not self._open_documents(path, self._document_sessions):
                self._documents_path = None  # gone or damaged since: documents go through the model itself
            if self._documents is not None:  # the documents' own sessions: queries do not wait for them
                return _normalise(self._documents.embed(cut))
            return self._float32_documents(cut)

    def _float32_documents(self, texts: Sequence[str]) -> Vectors:
        """Through the model itself, in batches of texts of like length (a batch is padded to its
        longest text); the model's turns batch by batch: a waiting query goes before the next batch."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = []
        for start in range(0, len(order), self._batch_size):
            with self._turns.documents:
                batches.append(self._run([texts[i] for i in order[start : start + self._batch_size]]))
            self._count(len(batches[-1]))  # after the turn is given back: a waiting query goes first
        rows = np.concatenate(batches)
        out = np.empty_like(rows)
        out[np.asarray(order, dtype=np.intp)] = rows
        return _normalise(out)

    def _run(self, texts: list[str]) -> Vectors:
        """One run of the model itself on a batch of documents."""
        import numpy as np

        return np.asarray(list(self._model.embed(texts, batch_size=len(texts))), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        """The query's vector; the last `QUERY_CACHE` queries' are remembered (a model retrying, paging
        or reformulating repeats them; the model costs ~3-30 ms a query, the cache nothing)."""
        import numpy as np

        with self._turns.queries:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached.copy()
            row = next(iter(self._model.query_embed(text)))
            vector: Vectors = _normalise(np.asarray([row], dtype=np.float32))[0]
            self._queries[text] = vector.copy()
            if len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def clear_query_cache(self) -> None:
        """Forget the remembered query vectors (benchmarks time the model, not the cache)."""
        with self._turns.queries:
            self._queries.clear()


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A deterministic bag-of-words embedder for tests where embeddings are not the subject.

    Texts that share words get similar vectors, so search still behaves sensibly; it is fast and needs
    no model files.
    """

    def __init__(self, dim: int = 64):
        self._dim = dim

    @property
    def model_name(self) -> str:
        return f"test/hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        import numpy as np

        vector = np.zeros(self._dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            bucket = int.from_bytes(digest[:3], "little") % self._dim
            vector[bucket] += 1.0 if digest[3] & 1 else -1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return _normalise(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = _normalise(self._vector(text)[None, :])[0]
        return vector


def verify(name: str, cache_dir: Path) -> int:
    """Load the model from the cache and embed a sentence; its dimension. Raises `ModelError`."""
    try:
        embedder = FastEmbedder(name, cache_dir)
        vectors = embedder.embed_documents(["pastchats checks that the model embeds"])
    except EmbedderUnavailable as exc:
        raise ModelError(str(exc)) from None
    except Exception as exc:  # onnxruntime and tokenizers raise their own kinds on broken files
        raise ModelError(f"model {name} is installed in {cache_dir} but does not load: {exc}") from None
    if vectors.shape[0] != 1 or not vectors.any():
        raise ModelError(f"model {name} loaded but produced no embedding")
    return embedder.dim


def prepare_documents_model(name: str, cache_dir: Path, derived_dir: Path) -> Path | None:
    """Derive (if not yet there) and check the int8 copy of the model that embeds documents
    (`storage.embedding.int8_model`); its file, or None where the model has none or it could not be made."""
    try:
        return FastEmbedder(name, cache_dir, derived_dir=derived_dir).prepare_documents_model()
    except EmbedderUnavailable:
        return None
