"""int8 copies of the model for documents: how close to float32, how cheap, which nodes to keep float.

    FASTEMBED_CACHE_PATH=/work/shared/fastembed_cache uv run python -m bench.int8_documents \\
        [--texts 300] [--variants shipped,all,none-kept] [--batches 1,16] [--repeats 1] [--sensitivity 80]
        [--sessions 1,2]

The texts are the passages and windows `storage.chunking` makes of `bench.perf_corpus` chats (what an
import embeds). Each variant is quantised from the installed float32 model into a temporary folder with
`storage.int8_model.quantize` (per-channel int8 weights, dynamic uint8 activations): `shipped` keeps
`storage.onnx_text.DIRECT`'s nodes in float32, `all` quantises every MatMul with a constant weight,
`ffn-out-3` keeps only the first three layers' feed-forward outputs. Every configuration embeds the
same texts through `DirectModel`, interleaved repeat by repeat; it prints CPU seconds (this shared
machine's wall time swings with its load) and each row's cosine to the float32 model's row at batch 16
(the product's float32 path). `--sensitivity N` instead quantises one node at a time and prints, for
each, the mean cosine loss on N texts: the measurement behind `DIRECT`'s list. `--sessions 1,2` instead
times the shipped copy run by one session with onnxruntime's threads against two single-threaded
sessions side by side (`onnx_text.document_sessions`), wall and CPU, and checks the rows' bits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.embed_speed import corpus_texts
from storage import int8_model, onnx_text
from storage.defaults import DEFAULT_MODEL


def source_folder() -> Path:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    direct = onnx_text.DIRECT[DEFAULT_MODEL.lower()]
    folder = onnx_text.snapshot_folder(Path(cache), direct.repo, [direct.model_file]) if cache else None
    if folder is None:
        raise SystemExit("set FASTEMBED_CACHE_PATH to a fastembed cache holding the default model")
    return folder


def weighted_matmuls(path: Path) -> list[str]:
    import onnx

    model = onnx.load(str(path))
    weights = {init.name for init in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type == "MatMul" and any(i in weights for i in n.input)]


def int8_copy(folder: Path, work: Path, name: str, keep_float: list[str], sessions: int = 1) -> onnx_text.DirectModel:
    """A `DirectModel` of the float32 model with `name.onnx`, its int8 copy, used for documents by
    `sessions` sessions side by side (1: one session, onnxruntime's own thread count)."""
    target = work / f"{name}.onnx"
    if not target.is_file():
        int8_model.quantize(folder / "model.onnx", target, keep_float)
    model = onnx_text.DirectModel(folder, "model.onnx")
    if not model.use_for_documents(target, sessions=sessions):
        raise SystemExit(f"{name}: the int8 copy was refused")
    return model


def sensitivity(folder: Path, work: Path, count: int) -> None:
    texts = corpus_texts(300)[::4][:count]
    reference = onnx_text.DirectModel(folder, "model.onnx").embed_documents(texts, 16)
    nodes = weighted_matmuls(folder / "model.onnx")
    losses = []
    for node in nodes:
        model = int8_copy(folder, work, "one", [n for n in nodes if n != node])
        loss = float(1 - np.mean(np.sum(reference * model.embed_documents(texts, 16), axis=1)))
        losses.append((loss, node))
        print(f"{loss:.5f} {node}", flush=True)
    print("most sensitive first:")
    for loss, node in sorted(losses, reverse=True):
        print(f"{loss:.5f} {node}")


def sessions_compare(folder: Path, work: Path, texts: list[str], counts: list[int], repeats: int) -> None:
    """The shipped copy run by one session (onnxruntime's threads) and by N single-threaded sessions side
    by side, interleaved repeat by repeat: wall and CPU time a text, and whether the rows are the same bits."""
    keep = list(onnx_text.DIRECT[DEFAULT_MODEL.lower()].int8_keep_float or ())
    models = {count: int8_copy(folder, work, "shipped", keep, sessions=count) for count in counts}
    wall: dict[int, list[float]] = {}
    cpu: dict[int, list[float]] = {}
    rows: dict[int, np.ndarray] = {}
    for _ in range(repeats):
        for count, model in models.items():
            started, spent = time.perf_counter(), time.process_time()
            rows[count] = model.embed_documents(texts, 16)
            wall.setdefault(count, []).append(time.perf_counter() - started)
            cpu.setdefault(count, []).append(time.process_time() - spent)
    first = counts[0]
    base = statistics.median(wall[first])
    for count in counts:
        seconds = statistics.median(wall[count])
        print(
            f"sessions {count}: {1000 * seconds / len(texts):6.2f} ms a text"
            f" (slowest repeat {1000 * max(wall[count]) / len(texts):.2f}), {base / seconds:.2f}x the texts a"
            f" second of sessions {first}; CPU {statistics.median(cpu[count]):.1f} s;"
            f" same bits as sessions {first}: {np.array_equal(rows[count], rows[first])}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--variants", default="shipped,ffn-out-3,all")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--sensitivity", type=int, help="quantise one node at a time on this many texts")
    parser.add_argument("--sessions", help="compare the shipped copy run by these session counts, e.g. 1,2")
    args = parser.parse_args()
    folder = source_folder()
    with tempfile.TemporaryDirectory(prefix="pastchats-int8-") as tmp:
        work = Path(tmp)
        if args.sensitivity:
            sensitivity(folder, work, args.sensitivity)
            return
        if args.sessions:
            texts = corpus_texts(400)[: args.texts]
            print(f"{len(texts)} texts; load {os.getloadavg()[0]:.1f}")
            sessions_compare(folder, work, texts, [int(c) for c in args.sessions.split(",")], args.repeats)
            return
        keep = {
            "shipped": list(onnx_text.DIRECT[DEFAULT_MODEL.lower()].int8_keep_float or ()),
            "all": [],
            "ffn-out-3": [f"/m/encoder/layer.{i}/output/dense/MatMul" for i in range(3)],
        }
        texts = corpus_texts(400)[: args.texts]
        print(f"{len(texts)} texts; load {os.getloadavg()[0]:.1f}")
        models = {"float32": onnx_text.DirectModel(folder, "model.onnx")}
        for name in args.variants.split(","):
            models[name] = int8_copy(folder, work, name, keep[name])
        batches = [int(b) for b in args.batches.split(",")]
        cpu: dict[tuple[str, int], list[float]] = {}
        rows: dict[tuple[str, int], np.ndarray] = {}
        for _ in range(args.repeats):
            for name, model in models.items():
                for batch in [16] if name == "float32" else batches:  # an int8 copy runs one text a run
                    started = time.process_time()
                    if name == "float32" or batch == 1:
                        rows[name, batch] = model.embed_documents(texts, batch)
                    else:  # the copy in batches: what one text a run is measured against
                        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
                        got = np.concatenate(
                            [
                                model._batch([texts[i] for i in order[s : s + batch]], model._documents[0])
                                for s in range(0, len(order), batch)
                            ]
                        )
                        rows[name, batch] = np.empty_like(got)
                        rows[name, batch][np.asarray(order)] = got
                    cpu.setdefault((name, batch), []).append(time.process_time() - started)
        base = statistics.median(cpu["float32", 16])
        for (name, batch), seconds in cpu.items():
            cosine = np.sum(rows["float32", 16] * rows[name, batch], axis=1)
            spent = statistics.median(seconds)
            print(
                f"{name:>10} batch {batch:>2}: {spent:6.1f} s CPU ({base / spent:.2f}x"
                f" float32's); cosine to float32 mean {cosine.mean():.5f}, p5 {np.percentile(cosine, 5):.5f},"
                f" min {cosine.min():.5f}"
            )


if __name__ == "__main__":
    main()
