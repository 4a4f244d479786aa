"""Speed and peak memory of embedding an import's passages: allocator settings, batch size, order.

    FASTEMBED_CACHE_PATH=/work/shared/fastembed_cache uv run python -m bench.embed_memory \\
        --messages 300 --repeats 2 --configs "32:noarena+chars,16:shipped"

Each configuration runs in its own child process (allocator state is per process), which loads the
model through `FastEmbedder` and embeds the passages `storage.chunking` makes of `bench.perf_corpus`
chats, 64 at a time (as `embed_pending` hands them over, in smaller calls). The child reports its
wall and CPU time (user, kernel) for the embedding alone, page faults, its peak RSS (VmHWM) after
loading the model and at the end, and a digest of the vectors (equal digests: the same bits).
Configurations run interleaved, repeat by repeat, so load drift on this shared machine hits them alike.

A configuration is `BATCH:FLAGS`, flags joined by `+`: `shipped` (what the product does), `noarena`
(onnxruntime's CPU arena off, as before the seventh session), `chars` (batches by length in
characters, as before, instead of in word pieces), `default` (glibc's malloc left as it is instead of
`storage.embedder.contain_malloc`'s limits). `32:noarena+chars` is the embedder of the sixth session.

`--queries N` instead times N short queries (a passage's first words) through the model with the
arena off and as shipped, interleaved query by query in one process: a search's query embedding.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import time


def vm(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return -1


def child(messages: int, batch: int, flags: set[str]) -> None:
    import os
    from pathlib import Path

    import numpy as np

    import storage.embedder as embedder_module
    from bench.embed_speed import corpus_texts
    from storage import onnx_text

    if "default" in flags:
        embedder_module.contain_malloc = lambda: None  # the run without limits
    if "noarena" in flags:
        defaults = onnx_text.DirectModel.__init__.__kwdefaults__
        assert defaults is not None
        defaults["memory_arena"] = False
    if "chars" in flags:  # not recognised as the direct model: batched by characters through `embed`
        embedder_module.DirectModel = type("NotDirect", (), {})  # type: ignore[misc, assignment]
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    model = embedder_module.FastEmbedder(cache_dir=Path(cache) if cache else None, batch_size=batch)
    loaded = vm("VmHWM")
    texts = corpus_texts(messages)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    rows = [model.embed_documents(texts[start : start + 64]) for start in range(0, len(texts), 64)]
    seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    vectors = np.concatenate(rows)
    result = {
        "texts": len(texts),
        "texts_per_s": round(len(texts) / seconds, 2),
        "seconds": round(seconds, 1),
        "user_s": round(after.ru_utime - before.ru_utime, 1),
        "sys_s": round(after.ru_stime - before.ru_stime, 1),
        "minor_faults": after.ru_minflt - before.ru_minflt,
        "after_load_mb": loaded,
        "peak_mb": vm("VmHWM"),
        "rss_mb": vm("VmRSS"),
        "vectors": hashlib.sha256(vectors.tobytes()).hexdigest()[:16],
    }
    print(json.dumps(result))


def queries(count: int) -> None:
    import os
    from pathlib import Path

    import numpy as np

    from bench.embed_speed import corpus_texts
    from storage import onnx_text
    from storage.defaults import DEFAULT_MODEL

    direct = onnx_text.DIRECT[DEFAULT_MODEL.lower()]
    folder = onnx_text.snapshot_folder(Path(os.environ["FASTEMBED_CACHE_PATH"]), direct.repo, [direct.model_file])
    assert folder is not None, "the default model is not in FASTEMBED_CACHE_PATH"
    models = {
        name: onnx_text.DirectModel(folder, direct.model_file, memory_arena=name == "shipped")
        for name in ("noarena", "shipped")
    }
    texts = [" ".join(text.split()[1:9]) for text in corpus_texts(count * 2)][:count]
    times: dict[str, list[float]] = {name: [] for name in models}
    rss = vm("VmRSS")
    for text in texts:
        rows = {}
        for name, model in models.items():
            started = time.perf_counter()
            rows[name] = next(model.query_embed(text))
            times[name].append((time.perf_counter() - started) * 1000)
        assert np.array_equal(rows["noarena"], rows["shipped"]), text
    for name, ms in times.items():
        p95 = statistics.quantiles(ms, n=20)[-1]
        print(f"{name}: query embedding p50 {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms ({len(ms)} queries)")
    print(f"same vectors; RSS {rss} MB before the queries, {vm('VmRSS')} MB after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--configs", default="32:noarena+chars,16:shipped")
    parser.add_argument("--queries", type=int, help="time this many queries instead")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.queries:
        queries(args.queries)
        return
    if args.child:
        batch, flags = args.child.split(":")
        child(args.messages, int(batch), set(flags.split("+")))
        return
    configs = args.configs.split(",")
    runs: dict[str, list[dict[str, float]]] = {config: [] for config in configs}
    for _ in range(args.repeats):
        for config in configs:
            command = [sys.executable, "-m", "bench.embed_memory", "--messages", str(args.messages), "--child", config]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            runs[config].append(json.loads(out))
            print(f"{config}: {out}", flush=True)
    base = configs[0]
    for config, results in runs.items():
        median = {key: statistics.median(r[key] for r in results) for key in ("texts_per_s", "user_s", "sys_s")}
        ratio = median["texts_per_s"] / statistics.median(r["texts_per_s"] for r in runs[base])
        peak = max(r["peak_mb"] for r in results)
        print(
            f"{config:>20}: {median['texts_per_s']:.1f} texts/s ({ratio:.2f}x {base}), user {median['user_s']} s, "
            f"sys {median['sys_s']} s, peak RSS {peak} MB, vectors {sorted({r['vectors'] for r in results})}"
        )


if __name__ == "__main__":
    main()
