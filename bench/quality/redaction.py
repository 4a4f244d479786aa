"""Redaction on chats without secrets: how often it fires (false positives) and what it costs.

    uv run python bench/quality/redaction.py [--data ../shared/bench] [--code-messages 20000] [--show 40]
    uv run python bench/quality/redaction.py --imports [--rounds 3]    # import throughput, redaction on and off

Three corpora, none holding a real secret:
- realistic: LoCoMo and LongMemEval_S dev conversations (every distinct session), and the test corpus;
- code-heavy: chats made of what coding agents read and print: the source files, lockfiles and
  package manifests installed in this environment (Python packages, `uv.lock`, npm's lockfiles), cut
  into tool-output-sized messages (≤ 6,000 characters) between short user turns.
Prints, per corpus, messages scanned, findings per 10,000 messages by kind, a sample of them to judge
(a finding in a library's own test data may be a real-looking key), and the scan's throughput.

`--imports`: LoCoMo's dev conversations imported into fresh stores with the real model (FASTEMBED_CACHE_PATH),
redaction on and off in alternating rounds, with embedding and keyword-only; the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from storage.redaction import Redaction  # noqa: E402

SLICE = 6_000
CODE_SUFFIXES = (".py", ".pyi", ".js", ".ts", ".json", ".toml", ".lock", ".yaml", ".yml", ".md", ".cfg", ".txt", ".rs")


def realistic(data: Path) -> Iterator[str]:
    seen: set[str] = set()
    locomo = json.loads((data / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    for sample in locomo:
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield f"{turn['speaker']}: {turn['text']}"
    lme = json.loads((data / "longmemeval" / "longmemeval_s_dev.json").read_text(encoding="utf-8"))
    for record in lme:
        for session in record["haystack_sessions"]:
            key = json.dumps(session[:2])
            if key in seen:
                continue
            seen.add(key)
            for turn in session:
                yield turn["content"]
    for line in (ROOT / "tests" / "fixtures" / "corpus" / "chats.jsonl").read_text(encoding="utf-8").splitlines():
        for message in json.loads(line).get("messages", []):
            yield message.get("text") or message.get("content") or ""


def code_heavy(limit: int) -> Iterator[str]:
    roots = [Path(p) for p in sys.path if p.endswith("site-packages")] + [ROOT / "tests" / "integration"]
    made = 0
    for root in roots:
        for path in sorted(root.rglob("*")):
            if made >= limit:
                return
            if path.suffix not in CODE_SUFFIXES or not path.is_file() or "redaction" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            yield f"Read {path.name}"
            for start in range(0, min(len(text), 60_000), SLICE):
                yield text[start : start + SLICE]
                made += 1
    lock = ROOT / "uv.lock"
    yield lock.read_text(encoding="utf-8")[:SLICE]


def scan(name: str, texts: Iterator[str], redaction: Redaction, show: int) -> None:
    kinds: Counter[str] = Counter()
    samples: list[str] = []
    messages = chars = 0
    started = time.perf_counter()
    for text in texts:
        messages += 1
        chars += len(text)
        for finding in redaction.find(text):
            kinds[finding.kind] += 1
            if len(samples) < show:
                around = text[max(0, finding.start - 40) : finding.end + 20].replace("\n", "⏎")
                samples.append(f"    {finding.kind}: …{around}…")
    seconds = time.perf_counter() - started
    found = kinds.total()
    print(f"{name}: {messages} messages, {chars / 1e6:.1f} M characters, {seconds:.1f} s")
    print(f"  findings: {found} ({found / messages * 10_000:.2f} per 10,000 messages)")
    print(f"  throughput: {messages / seconds:,.0f} messages/s, {chars / seconds / 1e6:.2f} M characters/s")
    for kind, n in kinds.most_common():
        print(f"    {kind}: {n}")
    if samples:
        print("  samples:")
        print("\n".join(samples))


def imports(data: Path, rounds: int) -> None:
    import statistics
    import tempfile

    from bench.quality.locomo import load_locomo
    from storage.embedding.embedder import FastEmbedder
    from storage.library import Library

    chats = [c for sample in load_locomo(data / "locomo" / "locomo_dev.json") for c in sample.conversations]
    messages = sum(len(c.messages) for c in chats)
    model = FastEmbedder(derived_dir=Path(tempfile.mkdtemp()))
    model.prepare_documents_model()  # derived once before timing: no round pays for it
    for embed in (False, True):
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(rounds):
            for enabled in (True, False):
                with tempfile.TemporaryDirectory() as home:
                    library = Library.open(Path(home), embedder=model, redaction=Redaction(enabled=enabled))
                    started = time.perf_counter()
                    library.import_conversations(chats, embed=embed)
                    seconds[enabled].append(time.perf_counter() - started)
                    library.close()
        on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
        label = "with embedding" if embed else "keyword-only"
        print(
            f"import {len(chats)} chats / {messages} messages {label}: redaction on {messages / on:,.0f} msg/s, "
            f"off {messages / off:,.0f} msg/s; on/off time {on / off:.3f} (medians of {rounds})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--code-messages", type=int, default=20_000)
    parser.add_argument("--show", type=int, default=40)
    parser.add_argument("--imports", action="store_true", help="measure import throughput instead")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.imports:
        imports(args.data, args.rounds)
        return
    redaction = Redaction()
    started = time.perf_counter()
    redaction.find("warm-up: load the rules")
    print(f"rules: {len(redaction.rules.rules)} loaded in {time.perf_counter() - started:.2f} s")
    scan("realistic", realistic(args.data), redaction, args.show)
    scan("code-heavy", code_heavy(args.code_messages), redaction, args.show)


if __name__ == "__main__":
    main()
