"""An int8 copy of the embedding model for documents, derived on this machine from the installed model.

Embedding passages is most of an import's time, and the float32 model already runs near this kind of
CPU's float32 peak. onnxruntime's dynamic quantisation (int8 weights per output channel, activations
quantised per run) runs the model's matrix products in int8; with one text a run
(`DirectModel.embed_documents`) an import takes ~0.56x the CPU time, and with one single-threaded
session of the copy per CPU, each on its own text, ~1.75x as many texts a second on two cores as one
session with two threads (`onnx_text.document_sessions`). Only documents go through it;
queries keep the float32 model, so only one side of a similarity carries quantisation noise, and a
search's latency is unchanged. The products `storage.onnx_text.DIRECT` names (those whose
quantisation moves the vectors most, measured node by node by cosine to float32 on realistic
passages) stay in float32: docs/BENCHMARKS.md "Round eight: an int8 model for documents".

The file is derived state: produced from the installed float32 file (nothing downloaded, nothing
shipped), in a child process (quantising holds ~0.4 GB for a few seconds, which an import's peak
should not carry), written to a temporary name and renamed into place, so a reader sees a whole file
or none. If anything fails (no `onnx`, a full disk, a file that does not load, vectors too far from
float32's), documents are embedded by the float32 model, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

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
    target.parent.mkdir(parents=True, exist_ok=True)
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
        os.chmod(temporary, 0o644)  # as readable as the model it comes from (mkstemp makes it private)
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def ensure(source: Path, target: Path, keep_float: Sequence[str]) -> Path | None:
    """`target`, produced from `source` first if it is not there; None if it cannot be produced."""
    if target.is_file():
        return target
    command = [sys.executable, "-m", "storage.int8_model", str(source), str(target), *keep_float]
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


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m storage.int8_model SOURCE TARGET [FLOAT_NODE ...]", file=sys.stderr)
        return 2
    quantize(Path(argv[0]), Path(argv[1]), argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
