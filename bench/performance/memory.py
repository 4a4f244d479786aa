"""Peak memory importing hostile-sized inputs: a zipped 1 GiB ChatGPT export, one 50 MB message.

    uv run python -m bench.performance.memory --export-mib 1024 --message-mib 50
    uv run python -m bench.performance.memory --cli --zipped-message-mib 200 --chat-messages 1000000

`--cli` measures `pastchats import` itself under `/usr/bin/time -v` (its "Maximum resident set size",
with no model installed, so passages await embedding): a zip holding one plain-format chat whose first
message is `--zipped-message-mib` MiB of one repeated word, and a JSON Lines file whose first chat has
`--chat-messages` messages; each file ends with a small chat that must be imported too.

Each case is built in a temporary folder and imported by a fresh process (the real import path, the
cheap deterministic HashEmbedder: embeddings are not what is measured); that process reports its own
peak RSS (ru_maxrss). The export holds many conversations whose ids cycle over 200, so the parser
streams the whole gigabyte while the store stays small.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

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


def build_zipped_message(target: Path, mib: int) -> Path:
    """A ChatGPT export zip of a few hundred KB: one chat whose question is `mib` MiB of one repeated
    word, then an ordinary chat."""
    big, after = chatgpt_conversation(0), chatgpt_conversation(1)
    node = next(iter(big["mapping"].values()))  # type: ignore[attr-defined]
    node["message"]["content"]["parts"] = ["@BLOB@"]
    head, tail = json.dumps([big, after]).split('"@BLOB@"')
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("conversations.json", "w") as out:
        out.write(head.encode() + b'"')
        for _ in range(mib):
            out.write(b"word " * (1024 * 1024 // 5) + b"word")
        out.write(b'"' + tail.encode())
    return target


AFTER = {"id": "after", "updated_at": "2025-01-02T00:00:00Z", "messages": [{"role": "user", "text": "the chat after"}]}


def build_long_chat(target: Path, messages: int) -> Path:
    with target.open("w", encoding="utf-8") as out:
        out.write('{"id": "long", "title": "a long chat", "updated_at": "2025-01-01T00:00:00Z", "messages": [')
        for i in range(messages):
            role = "user" if i % 2 == 0 else "assistant"
            out.write(("," if i else "") + json.dumps({"role": role, "text": f"message {i} about topic {i % 977}"}))
        out.write("]}\n" + json.dumps(AFTER) + "\n")  # a chat after it, which must be imported too
    return target


def measure_cli(source: Path, home: Path) -> str:
    """`pastchats import SOURCE` under /usr/bin/time -v: its peak RSS, and what it reported."""
    env = {**os.environ, "PASTCHATS_HOME": str(home), "PASTCHATS_MODEL_CACHE": str(home / "no-model")}
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "server.cli", "import", str(source)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    peak = next(line for line in done.stderr.splitlines() if "Maximum resident set size" in line)
    kib = int(peak.rsplit(":", 1)[1])
    report = [line for line in done.stdout.splitlines() if line.strip()]
    return f"exit {done.returncode}, peak RSS {kib / 1024:.0f} MiB; " + " | ".join(report[-3:])


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
    parser.add_argument("--cli", action="store_true", help="measure `pastchats import` under /usr/bin/time -v")
    parser.add_argument("--zipped-message-mib", type=int, default=200)
    parser.add_argument("--chat-messages", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.cli:
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            zipped = build_zipped_message(work / "message.zip", args.zipped_message_mib)
            size = zipped.stat().st_size // 1024
            print(f"zip of {size} KB, one {args.zipped_message_mib} MiB message: {measure_cli(zipped, work / 'a')}")
            chat = build_long_chat(work / "long.jsonl", args.chat_messages)
            print(f"one chat of {args.chat_messages:,} messages: {measure_cli(chat, work / 'b')}")
        return
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        export = build_export(work / "export.zip", args.export_mib)
        zipped = export.stat().st_size // 1024**2
        print(f"export {args.export_mib} MiB ({zipped} MiB zipped): {measure(export, work / 'a')}")
        message = build_message(work / "big.jsonl", args.message_mib)
        print(f"one {args.message_mib} MiB message: {measure(message, work / 'b')}")


if __name__ == "__main__":
    main()
