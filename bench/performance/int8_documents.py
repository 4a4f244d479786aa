"""int8 copies of the model for documents: how close to float32, how cheap, which nodes to keep float.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python -m bench.performance.int8_documents \\
        [--texts 300] [--variants shipped,all,none-kept] [--batches 1,16] [--repeats 1] [--sensitivity 80]
        [--sessions 1,2]

The texts are the passages and windows `storage.units.passages` makes of `bench.corpus.synthetic` chats (what an
import embeds). Each variant is quantised from the installed float32 model into a temporary folder with
`storage.embedding.int8_model.quantize` (per-channel int8 weights, dynamic uint8 activations): `shipped` keeps
`storage.embedding.int8_model.KEEP_FLOAT`'s nodes in float32, `all` quantises every MatMul with a constant weight,
`ffn-out-3` keeps only the first three layers' feed-forward outputs. Every configuration embeds the
same texts through fastembed (`storage.embedding.int8_model.DocumentSessions`), interleaved repeat by repeat; it
prints CPU seconds (this shared machine's wall time swings with its load) and each row's cosine to the
float32 model's row at batch 16 (the product's float32 path). `--sensitivity N` instead quantises one
node at a time and prints, for each, the mean cosine loss on N texts: the measurement behind
`KEEP_FLOAT`. `--sessions 1,2` instead times the shipped copy run by N single-threaded sessions side
by side (`int8_model.document_sessions`), wall and CPU, and checks the rows' bits.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.corpus.synthetic import CorpusWriter
from storage.embedding import int8_model
from storage.embedding.embedder import FastEmbedder
from storage.embedding.model_files import DEFAULT_MODEL, describe, installed_path
from storage.units.passages import chunk_conversation

SHIPPED = list(int8_model.KEEP_FLOAT[DEFAULT_MODEL.lower()])


def corpus_texts(messages: int, seed: int = 12) -> list[str]:
    """What an import of `messages` corpus messages gives the model to embed."""
    return [
        chunk.embed_text
        for conversation in CorpusWriter(messages, seed)
        for chunk in chunk_conversation(conversation, DEFAULT_MODEL)
        if chunk.model_text
    ]


def source_folder() -> Path:
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    folder = installed_path(describe(DEFAULT_MODEL), Path(cache)) if cache else None
    if folder is None:
        raise SystemExit("set FASTEMBED_CACHE_PATH to a fastembed cache holding the default model")
    return folder


def weighted_matmuls(path: Path) -> list[str]:
    import onnx

    model = onnx.load(str(path))
    weights = {init.name for init in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type == "MatMul" and any(i in weights for i in n.input)]


def int8_copy(
    folder: Path, work: Path, name: str, keep_float: list[str], sessions: int = 1
) -> int8_model.DocumentSessions:
    """`sessions` single-threaded sessions, side by side, of the float32 model's int8 copy `name`."""
    target = work / name / "model.onnx"
    if not target.is_file():
        int8_model.quantize(folder / "model.onnx", target, keep_float)
        int8_model.with_tokenizer(target, folder)
    return int8_model.DocumentSessions([int8_model.load(target, 384) for _ in range(sessions)])


@functools.cache
def float32_model() -> FastEmbedder:
    return FastEmbedder(DEFAULT_MODEL, Path(os.environ["FASTEMBED_CACHE_PATH"]))


def float32_rows(texts: list[str]) -> np.ndarray:
    """The float32 model's rows, as the product embeds documents without an int8 copy (batches of 16)."""
    return float32_model().embed_documents(texts)


def sensitivity(folder: Path, work: Path, count: int) -> None:
    texts = corpus_texts(300)[::4][:count]
    reference = float32_rows(texts)
    nodes = weighted_matmuls(folder / "model.onnx")
    losses = []
    for node in nodes:
        shutil.rmtree(work / "one", ignore_errors=True)
        model = int8_copy(folder, work, "one", [n for n in nodes if n != node])
        loss = float(1 - np.mean(np.sum(reference * model.embed(texts), axis=1)))
        losses.append((loss, node))
        print(f"{loss:.5f} {node}", flush=True)
    print("most sensitive first:")
    for loss, node in sorted(losses, reverse=True):
        print(f"{loss:.5f} {node}")


def sessions_compare(folder: Path, work: Path, texts: list[str], counts: list[int], repeats: int) -> None:
    """The shipped copy run by one session (onnxruntime's threads) and by N single-threaded sessions side
    by side, interleaved repeat by repeat: wall and CPU time a text, and whether the rows are the same bits."""
    models = {count: int8_copy(folder, work, "shipped", SHIPPED, sessions=count) for count in counts}
    wall: dict[int, list[float]] = {}
    cpu: dict[int, list[float]] = {}
    rows: dict[int, np.ndarray] = {}
    for _ in range(repeats):
        for count, model in models.items():
            started, spent = time.perf_counter(), time.process_time()
            rows[count] = model.embed(texts)
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
            "shipped": SHIPPED,
            "all": [],
            "ffn-out-3": [f"/m/encoder/layer.{i}/output/dense/MatMul" for i in range(3)],
        }
        texts = corpus_texts(400)[: args.texts]
        print(f"{len(texts)} texts; load {os.getloadavg()[0]:.1f}")
        float32_model()
        models = {name: int8_copy(folder, work, name, keep[name]) for name in args.variants.split(",")}
        batches = [int(b) for b in args.batches.split(",")]
        cpu: dict[tuple[str, int], list[float]] = {}
        rows: dict[tuple[str, int], np.ndarray] = {}
        for _ in range(args.repeats):
            started = time.process_time()
            rows["float32", 16] = float32_rows(texts)
            cpu.setdefault(("float32", 16), []).append(time.process_time() - started)
            for name, model in models.items():
                for batch in batches:  # the product runs an int8 copy one text a run
                    started = time.process_time()
                    if batch == 1:
                        rows[name, batch] = model.embed(texts)
                    else:  # the copy in batches: what one text a run is measured against
                        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
                        session = model.models[0]
                        got = np.concatenate(
                            [
                                np.asarray(
                                    list(session.embed([texts[i] for i in order[s : s + batch]], batch_size=batch))
                                )
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
