"""Appends shaped exactly as the coding agents write their logs, for the live-sync tests and `bench.performance.live`.

The shapes are the importer fixtures' (`tests/fixtures/importers`): Claude Code's transcript records
(`parentUuid` chained to the previous message), Codex's rollout items (the user's message as a
response item and an event, the answer as a response item), Gemini CLI's JSON Lines session records.
Each record is one line written whole with its newline, as the agents append them; `half` writes the
last line in two parts, the way a large record can reach the disk.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "importers"

CLAUDE_CODE = ".claude/projects/-home-ana-src-shop/5e55e000-1111-4000-8000-000000000001.jsonl"
CODEX = ".codex/sessions/2025/03/14/rollout-2025-03-14T09-00-00-0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
GEMINI = (
    ".gemini/tmp/ddd5c1271bba0899aa1da52d83260612eaf190303be48f820f2c891ffbfd9168/chats/"
    "session-2025-04-02T10-00-9c1d2e3f.jsonl"
)
SESSIONS = {"claude-code": CLAUDE_CODE, "codex": CODEX, "gemini": GEMINI}
CHAT_IDS = {
    "claude-code": "claude-code:5e55e000-1111-4000-8000-000000000001",
    "codex": "codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "gemini": "gemini:9c1d2e3f-0000-4000-8000-00000000abcd",
}


def make_agent_home(home: Path) -> Path:
    """A home directory holding the fixtures' Claude Code, Codex and Gemini CLI logs where the agents keep them."""
    shutil.copytree(FIXTURES / "claude-code" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex", home / ".codex")
    shutil.copytree(FIXTURES / "gemini", home / ".gemini")
    return home


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _last_uuid(path: Path) -> str | None:
    last = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("uuid"), str):
            last = record["uuid"]
    return last


def claude_code_lines(path: Path, question: str, answer: str, n: int) -> list[str]:
    parent = _last_uuid(path)
    lines = []
    for kind, text in (("user", question), ("assistant", answer)):
        uuid = f"live-{kind[0]}-{n}"
        message: dict[str, object] = {"role": "user", "content": text}
        if kind == "assistant":
            message = {
                "id": f"msg_live_{n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
            }
        record = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/ana/src/shop",
            "sessionId": "5e55e000-1111-4000-8000-000000000001",
            "version": "1.0.80",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": _stamp(),
        }
        lines.append(json.dumps(record, separators=(",", ":")))
        parent = uuid
    return lines


def codex_lines(path: Path, question: str, answer: str, n: int) -> list[str]:
    def item(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"timestamp": _stamp(), "type": kind, "payload": payload}, separators=(",", ":"))

    return [
        item(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]},
        ),
        item("event_msg", {"type": "user_message", "message": question, "images": []}),
        item(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]},
        ),
    ]


def gemini_lines(path: Path, question: str, answer: str, n: int) -> list[str]:
    return [
        json.dumps({"id": f"live-u-{n}", "timestamp": _stamp(), "type": "user", "content": [{"text": question}]}),
        json.dumps(
            {"id": f"live-g-{n}", "timestamp": _stamp(), "type": "gemini", "content": answer, "model": "gemini-2.5-pro"}
        ),
    ]


WRITERS = {"claude-code": claude_code_lines, "codex": codex_lines, "gemini": gemini_lines}


def append_exchange(home: Path, agent: str, question: str, answer: str, n: int, *, half: bool = False) -> Path:
    """Append one exchange to `agent`'s session under `home`, one write per line; `half`: the last line
    in two writes a moment apart. Returns the session file."""
    path = home / SESSIONS[agent]
    lines = WRITERS[agent](path, question, answer, n)
    with path.open("a", encoding="utf-8") as handle:
        for i, line in enumerate(lines):
            if half and i == len(lines) - 1:
                middle = len(line) // 2
                handle.write(line[:middle])
                handle.flush()
                time.sleep(0.5)
                handle.write(line[middle:] + "\n")
            else:
                handle.write(line + "\n")
            handle.flush()
    return path
