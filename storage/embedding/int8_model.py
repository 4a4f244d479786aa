"""An int8 copy of the embedding model for documents, derived on this machine from the installed model.

Embedding passages is most of an import's time, and the float32 model already runs near this kind of
CPU's float32 peak. onnxruntime's dynamic quantisation (int8 weights per output channel, activations
quantised per run) runs the model's matrix products in int8; with one text a run an import takes
~0.56x the CPU time, and with one single-threaded session of the copy per CPU, each on its own text,
~1.75x as many texts a second on two cores as one session with two threads (`document_sessions`).
Only documents go through it; queries keep the float32 model, so only one side of a similarity
carries quantisation noise, and a search's latency is unchanged. The products `KEEP_FLOAT` names
(those whose quantisation moves the vectors most, measured node by node by cosine to float32 on
realistic passages: `bench/performance/int8_documents.py --sensitivity`) stay in float32.

The file is derived state: produced from the installed float32 file (nothing downloaded, nothing
shipped), in a child process (quantising holds ~0.4 GB for a few seconds, which an import's peak
should not carry), written to a temporary name and renamed into place, so a reader sees a whole file
or none. The model's tokenizer files are copied beside it, and fastembed loads the folder as a model
of its own (`TextEmbedding.add_custom_model`, `specific_model_path`). If anything fails (no `onnx`,
a full disk, a file that does not load, vectors too far from float32's), documents are embedded by
the float32 model, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from storage.embedding.model_files import DEFAULT_MODEL
from storage.owner_only import make_folder, restrict_new_files

log = logging.getLogger(__name__)

# The matrix products each model's int8 copy keeps in float32: those whose quantisation alone moves
# the vectors most, measured node by node on realistic passages. A model not here has no int8 copy.
KEEP_FLOAT = {
    DEFAULT_MODEL.lower(): (
        # the feed-forward output of the first three layers, then the next two by sensitivity
        "/m/encoder/layer.0/output/dense/MatMul",
        "/m/encoder/layer.1/output/dense/MatMul",
        "/m/encoder/layer.2/output/dense/MatMul",
        "/m/encoder/layer.4/attention/self/value/MatMul",
        "/m/encoder/layer.1/intermediate/dense/MatMul",
    )
}
# A document model whose vectors of these texts are further than this from the float32 model's
# (cosine) is not used: a quantisation gone wrong, or a file that is not what it claims.
MIN_COSINE = 0.98
PROBES = (
    "User: how do I make the nginx reverse proxy keep the Host header when it forwards to the app?",
    "def parse(path):\n    with open(path) as f:\n        return json.load(f)",
    "We agreed to meet on 14 March 2023 to review the migration plan and the budget.",
)
# What fastembed reads beside the model file to tokenize as the model does.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
# At most this many sessions of the int8 copy embed documents at once, one text each, one thread each.
MAX_DOCUMENT_SESSIONS = 4

# Names the recipe below; a change of recipe makes a new file beside the old one.
RECIPE = "int8-dyn-pc1"
# How long producing the file may take (a few seconds on a 2-core machine under load).
TIMEOUT_S = 300


def derived_file(root: Path, repo: str, revision: str, source: Path, keep_float: Sequence[str]) -> Path:
    """Where the int8 copy of `source` (the model file of `repo` at `revision`, `keep_float` left in
    float32) lives under `root`: a new recipe, model file or choice of nodes is a new file."""
    size = source.stat().st_size
    nodes = hashlib.sha256("\n".join(keep_float).encode()).hexdigest()[:12]
    return root / "int8" / ("models--" + repo.replace("/", "--")) / revision / f"{RECIPE}-{size}-{nodes}.onnx"


def quantize(source: Path, target: Path, keep_float: Sequence[str]) -> None:
    """Write the int8 model of `source` to `target` atomically; `keep_float`: MatMul nodes left in float32."""
    import logging as std_logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    std_logging.getLogger().setLevel(std_logging.ERROR)  # the quantiser's advice on pre-processing
    make_folder(target.parent)
    handle, temporary = tempfile.mkstemp(prefix=".quantizing-", suffix=".onnx", dir=target.parent)
    os.close(handle)
    try:
        quantize_dynamic(
            str(source),
            temporary,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=list(keep_float),
            per_channel=True,
            reduce_range=False,
            weight_type=QuantType.QInt8,
        )
        os.replace(temporary, target)  # owner-only, as mkstemp made it: like every file pastchats writes
    finally:
        Path(temporary).unlink(missing_ok=True)


def ensure(source: Path, target: Path, keep_float: Sequence[str]) -> Path | None:
    """`target`, produced from `source` first if it is not there; None if it cannot be produced."""
    if target.is_file():
        return target
    command = [sys.executable, "-m", "storage.embedding.int8_model", str(source), str(target), *keep_float]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not derive the int8 document model (%s); documents use the float32 model", exc)
        return None
    if done.returncode != 0 or not target.is_file():
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        log.warning("could not derive the int8 document model (%s); documents use the float32 model", detail)
        return None
    log.info("derived the int8 document model %s", target)
    return target


def with_tokenizer(target: Path, snapshot: Path) -> Path:
    """`target`, with the model's tokenizer files (from its installed `snapshot`) copied beside it."""
    for name in TOKENIZER_FILES:
        source, copy = snapshot / name, target.parent / name
        if source.is_file() and not copy.is_file():
            handle, temporary = tempfile.mkstemp(prefix=".copying-", dir=target.parent)
            os.close(handle)
            try:
                shutil.copyfile(source, temporary)  # into mkstemp's owner-only file
                os.replace(temporary, copy)
            finally:
                Path(temporary).unlink(missing_ok=True)
    return target


def document_sessions() -> int:
    """How many single-threaded sessions of the int8 copy embed documents side by side: one per CPU
    this process may run on, up to `MAX_DOCUMENT_SESSIONS`.

    One text is a small run: onnxruntime splitting it over two threads finished it only ~1.1x sooner
    than one thread, for ~1.3x the CPU time (operator by operator, each thread waits for the other).
    Two single-threaded sessions, each on its own text, embed ~1.75x as many texts a second as one
    session with two threads, with the same bits."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DOCUMENT_SESSIONS))


_registered: set[str] = set()
_registering = threading.Lock()


def load(path: Path, dim: int) -> Any:
    """One fastembed model of the int8 copy in `path` (its tokenizer files beside it), one thread."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    # Mean-pooled and normalised, as the float32 model it comes from; a name of its own per file.
    name = "pastchats/int8-" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    with _registering:
        if name not in _registered:
            TextEmbedding.add_custom_model(
                name, PoolingType.MEAN, True, ModelSource(url=path.as_uri()), dim, model_file=path.name
            )
            _registered.add(name)
    return TextEmbedding(name, threads=1, specific_model_path=str(path.parent), local_files_only=True)


Rows = npt.NDArray[np.float32]


class DocumentSessions:
    """Sessions of the int8 copy, each its own fastembed model with one thread, embedding one text a run.

    One text a run: int8 activations are quantised with one scale per run, so a text's vector would
    depend on the texts (and padding) batched with it; alone it does not, its scale fits it alone
    (closer to float32), and no padding is computed. Cheaper too: ~0.7x the CPU time of length-sorted
    batches of 16. With several sessions, each session's thread takes the next text not yet taken
    (texts differ in length, so no fixed share) and writes its row in place; a row is the same bits
    whichever session runs it."""

    def __init__(self, models: list[Any]):
        self.models = models
        self.on_run: Callable[[], None] | None = None  # after each text's run, from its session's thread
        self._workers = (
            ThreadPoolExecutor(max_workers=len(models), thread_name_prefix="pastchats-embed")
            if len(models) > 1
            else None
        )

    def run(self, model: Any, text: str) -> Rows:
        """One text through one session (the single place a document run happens)."""
        row = np.asarray(list(model.embed([text], batch_size=1)), dtype=np.float32)
        if self.on_run is not None:
            self.on_run()
        return row

    def embed(self, texts: Sequence[str]) -> Rows:
        if self._workers is None or len(texts) == 1:
            return np.concatenate([self.run(self.models[0], text) for text in texts])
        rows: list[Rows | None] = [None] * len(texts)
        taken = iter(range(len(texts)))
        lock = threading.Lock()
        failed = threading.Event()  # one session's error stops the others taking more texts

        def work(model: Any) -> None:
            while not failed.is_set():
                with lock:
                    index = next(taken, None)
                if index is None:
                    return
                try:
                    rows[index] = self.run(model, texts[index])
                except BaseException:
                    failed.set()
                    raise

        runs = [self._workers.submit(work, model) for model in self.models[: len(texts)]]
        for run in runs:
            run.result()  # re-raises a session's error here
        return np.concatenate(rows)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._workers is not None:
            self._workers.shutdown(wait=False)
        self.models = []


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m storage.embedding.int8_model SOURCE TARGET [FLOAT_NODE ...]", file=sys.stderr)
        return 2
    restrict_new_files()  # an entry point of its own: what onnxruntime writes is owner-only too
    quantize(Path(argv[0]), Path(argv[1]), argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
