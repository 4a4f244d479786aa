"""How sync's time grows with the sessions in one busy Claude Code project folder.

    python -m bench.performance.sync_scale [--sessions 200 2000] [--messages 6]

Each size gets a fresh temporary HOME holding `~/.claude/projects/<project>/<uuid>.jsonl` sessions in
Claude Code's shape (user and assistant records, a summary record naming another session's message, as
Claude Code writes them), and a fresh store; one `Syncer.run_once(embed=False)` reads them all (the
first sync of a user with that history; embedding, which sync leaves for later, is left out). Printed:
seconds per size, and each size's time over the smallest's, against the ratio of their sizes: linear
sync keeps the two close.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

PROJECT = "-home-ana-src-shop"
START = datetime(2025, 6, 1, tzinfo=UTC)


def _session(number: int, messages: int) -> str:
    session = f"5e55e000-0000-4000-8000-{number:012d}"
    records: list[dict[str, object]] = []
    if number:  # Claude Code writes titles of earlier sessions at the head of a later one
        records.append(
            {"type": "summary", "summary": f"Session {number - 1} summed up", "leafUuid": f"{number - 1}-u0"}
        )
    parent = None
    for turn in range(messages):
        at = (START + timedelta(minutes=number * 10 + turn)).isoformat().replace("+00:00", "Z")
        uuid = f"{number}-u{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        content: object = f"question {turn} about the checkout test in session {number}"
        if role == "assistant":
            content = [{"type": "text", "text": f"answer {turn}: the fixture for session {number} is stale"}]
        message: dict[str, object] = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"msg_{number}_{turn}"
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "cwd": "/home/ana/src/shop",
                "sessionId": session,
                "type": role,
                "message": message,
                "uuid": uuid,
                "timestamp": at,
            }
        )
        parent = uuid
    return "".join(json.dumps(record) + "\n" for record in records)


def write_sessions(home: Path, sessions: int, messages: int) -> None:
    folder = home / ".claude" / "projects" / PROJECT
    folder.mkdir(parents=True)
    for number in range(sessions):
        (folder / f"5e55e000-0000-4000-8000-{number:012d}.jsonl").write_text(_session(number, messages))


def time_sync(sessions: int, messages: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="pastchats-sync-scale-") as scratch:
        home = Path(scratch) / "home"
        write_sessions(home, sessions, messages)
        library = Library.open(Path(scratch) / "store", embedder=HashEmbedder())
        try:
            syncer = Syncer(library, env={}, home=home, formats=["claude-code"])
            started = time.perf_counter()
            report = syncer.run_once(embed=False)
            elapsed = time.perf_counter() - started
        finally:
            library.close()
        if report.not_run or report.files_failed:
            raise SystemExit(f"sync did not run cleanly: {report.text()}")
        return elapsed, report.conversations_new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--messages", type=int, default=6)
    args = parser.parse_args()
    sizes = sorted(args.sessions)
    results = {size: time_sync(size, args.messages) for size in sizes}
    base_size, (base_time, _) = sizes[0], results[sizes[0]]
    print(f"{'sessions':>9} {'stored':>7} {'seconds':>8} {'time ratio':>11} {'size ratio':>11}")
    for size in sizes:
        elapsed, stored = results[size]
        print(f"{size:>9} {stored:>7} {elapsed:>8.2f} {elapsed / base_time:>11.1f} {size / base_size:>11.1f}")


if __name__ == "__main__":
    main()
