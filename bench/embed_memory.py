"""Peak memory of embedding an import's passages: batch size, and glibc malloc limits.

    FASTEMBED_CACHE_PATH=/work/shared/fastembed_cache uv run python -m bench.embed_memory \\
        --messages 200 --configs "32:default,32:contained,16:contained"

Each configuration runs in its own child process, which loads the model through `FastEmbedder` and
embeds the passages `storage.chunking` makes of `bench.perf_corpus` chats, 64 at a time (as
`embed_pending` hands them over, in smaller calls); the child reports its peak RSS (VmHWM) after
loading the model and at the end. `default` leaves glibc's malloc as it is; `contained` is what
`storage.embedder.contain_malloc` sets (what the product does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def vm(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return -1


def child(messages: int, batch: int, contained: bool) -> None:
    import os
    from pathlib import Path

    import storage.embedder as embedder_module
    from bench.embed_speed import corpus_texts

    if not contained:
        embedder_module.contain_malloc = lambda: None  # the run without limits: the baseline
    cache = os.environ.get("FASTEMBED_CACHE_PATH")
    model = embedder_module.FastEmbedder(cache_dir=Path(cache) if cache else None, batch_size=batch)
    loaded = vm("VmHWM")
    texts = corpus_texts(messages)
    for start in range(0, len(texts), 64):
        model.embed_documents(texts[start : start + 64])
    print(json.dumps({"texts": len(texts), "after_load_mb": loaded, "peak_mb": vm("VmHWM"), "rss_mb": vm("VmRSS")}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--configs", default="32:default,32:contained,16:contained")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        batch, mode = args.child.split(":")
        child(args.messages, int(batch), mode == "contained")
        return
    for config in args.configs.split(","):
        command = [sys.executable, "-m", "bench.embed_memory", "--messages", str(args.messages), "--child", config]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(f"{config}: {out}", flush=True)


if __name__ == "__main__":
    main()
