"""Peak memory importing hostile-sized inputs: a zipped 1 GiB ChatGPT export, one 50 MB message.

    uv run python -m bench.memory --export-mib 1024 --message-mib 50

Each case is built in a temporary folder and imported by a fresh process (the real import path, the
cheap deterministic HashEmbedder: embeddings are not what is measured); that process reports its own
peak RSS (ru_maxrss). The export holds many conversations whose ids cycle over 200, so the parser
streams the whole gigabyte while the store stays small.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import resource, sys, time
from pathlib import Path
from importers import registry
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
started = time.monotonic()
conversations, report = registry.read(Path(sys.argv[1]))
stats = Library.open(Path(sys.argv[2]), embedder=HashEmbedder()).import_conversations(conversations)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"new={stats.new} unchanged={stats.unchanged} seconds={time.monotonic() - started:.0f} peak_rss_mib={peak:.0f}")
"""


def chatgpt_conversation(i: int) -> dict[str, object]:
    cid = f"c{i % 200}"
    mapping: dict[str, object] = {}
    parent = None
    for j in range(8):
        node = f"{cid}-n{j}"
        text = f"message {j} of chat {cid} " + "lorem ipsum dolor " * 70
        message = {"id": node, "author": {"role": "user" if j % 2 == 0 else "assistant"}, "create_time": 1.7e9 + j,
                   "content": {"content_type": "text", "parts": [text]}}  # fmt: skip
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": message}
        parent = node
    return {"id": cid, "title": f"chat {cid}", "create_time": 1.7e9, "update_time": 1.7e9 + 10,
            "current_node": parent, "mapping": mapping}  # fmt: skip


def build_export(target: Path, mib: int) -> Path:
    with (
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("conversations.json", "w", force_zip64=True) as out,
    ):
        out.write(b"[")
        written = count = 0
        while written < mib * 1024 * 1024:
            data = (b"," if count else b"") + json.dumps(chatgpt_conversation(count)).encode()
            out.write(data)
            written, count = written + len(data), count + 1
        out.write(b"]")
    return target


def build_message(target: Path, mib: int) -> Path:
    blob = "x" * (mib * 1024 * 1024)  # no whitespace at all: nothing to split on
    record = {"id": "big", "updated_at": "2025-01-01T00:00:00Z",
              "messages": [{"role": "user", "text": blob}, {"role": "assistant", "text": "ok"}]}  # fmt: skip
    target.write_text(json.dumps(record) + "\n")
    return target


def measure(source: Path, home: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(source), str(home)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export-mib", type=int, default=1024)
    parser.add_argument("--message-mib", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        export = build_export(work / "export.zip", args.export_mib)
        zipped = export.stat().st_size // 1024**2
        print(f"export {args.export_mib} MiB ({zipped} MiB zipped): {measure(export, work / 'a')}")
        message = build_message(work / "big.jsonl", args.message_mib)
        print(f"one {args.message_mib} MiB message: {measure(message, work / 'b')}")


if __name__ == "__main__":
    main()
