"""Model throughput on the texts an import embeds: batching order, batch size, threads, int8 weights.

    FASTEMBED_CACHE_PATH=/work/shared/fastembed_cache uv run python -m bench.embed_speed \\
        --messages 400 --repeats 3 [--int8 DIR] [--configs "unsorted:32,sorted:32,sorted:64"]

The texts are the passages `storage.chunking` makes of `bench.perf_corpus` chats (what an import
embeds, previous-turn context included). Every configuration embeds the same texts; configurations
run interleaved, repeat by repeat, so load drift on this shared machine hits them alike. The
baseline is `unsorted:32`: fastembed over the texts in import order, 32 a batch (the embedder before
length sorting). `--int8 DIR` adds the same configurations on an int8 model folder (the model's files with
`model.onnx` from onnxruntime's `quantize_dynamic`), and prints how close its vectors are to the
float32 model's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from bench.perf_corpus import CorpusWriter
from storage.chunking import chunk_conversation
from storage.embedding.embedder import DEFAULT_MODEL


def corpus_texts(messages: int, seed: int = 12) -> list[str]:
    return [
        chunk.embed_text
        for conversation in CorpusWriter(messages, seed)
        for chunk in chunk_conversation(conversation, DEFAULT_MODEL)
        if chunk.model_text
    ]


def load(path: str | None, threads: int | None) -> Any:
    from fastembed import TextEmbedding

    kwargs: dict[str, Any] = {"model_name": DEFAULT_MODEL, "enable_cpu_mem_arena": False, "threads": threads}
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    if path:
        kwargs["specific_model_path"] = path
    elif cache:
        kwargs["cache_dir"] = cache
    return TextEmbedding(**kwargs, local_files_only=True)


def embed(model: Any, texts: list[str], sort: bool, batch: int) -> np.ndarray:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if sort else list(range(len(texts)))
    rows = np.asarray(list(model.embed([texts[i] for i in order], batch_size=batch)), dtype=np.float32)
    out = np.empty_like(rows)
    out[np.asarray(order, dtype=np.intp)] = rows
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", default="unsorted:32,sorted:32,sorted:16,sorted:64,sorted:128")
    parser.add_argument("--threads", type=int, help="onnxruntime threads (default: onnxruntime's choice)")
    parser.add_argument("--int8", help="an int8 model folder to compare")
    args = parser.parse_args()
    texts = corpus_texts(args.messages)
    chars = sum(len(t) for t in texts)
    print(f"{len(texts)} texts from {args.messages} messages, {chars / len(texts):.0f} characters on average")
    models = {"fp32": load(None, args.threads)}
    if args.int8:
        models["int8"] = load(args.int8, args.threads)
    configs = [
        (name, c.split(":")[0] == "sorted", int(c.split(":")[1])) for name in models for c in args.configs.split(",")
    ]
    times: dict[str, list[float]] = {f"{n} {'sorted' if s else 'unsorted'}:{b}": [] for n, s, b in configs}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for name, sort, batch in configs:
            started = time.perf_counter()
            vectors[name] = embed(models[name], texts, sort, batch)
            times[f"{name} {'sorted' if sort else 'unsorted'}:{batch}"].append(time.perf_counter() - started)
    base = statistics.median(times["fp32 unsorted:32"]) if "fp32 unsorted:32" in times else None
    result: dict[str, Any] = {"texts": len(texts), "messages": args.messages, "load": os.getloadavg()[0]}
    for label, seconds in times.items():
        med = statistics.median(seconds)
        ratio = f", {base / med:.2f}x the baseline" if base else ""
        spread = f"{min(seconds):.1f}-{max(seconds):.1f} s"
        print(f"{label:>20}: {len(texts) / med:6.1f} texts/s (median of {len(seconds)}; {spread}){ratio}")
        result[label] = {"texts_per_s": round(len(texts) / med, 1), "ratio": round(base / med, 2) if base else None}
    if "int8" in vectors:
        cosine = np.sum(vectors["fp32"] * vectors["int8"], axis=1)
        print(f"int8 vs fp32 cosine: median {np.median(cosine):.4f}, min {cosine.min():.4f}")
        result["int8_cosine"] = {"median": float(np.median(cosine)), "min": float(cosine.min())}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
