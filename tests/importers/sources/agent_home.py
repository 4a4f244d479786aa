"""A fake home directory holding Claude Code, Codex and Gemini CLI logs, built from the importer fixtures."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from importers.sources.archive import Archive
from importers.sources.privacy import Exclusions
from importers.sources.sync import Syncer
from storage.embedding.embedder import HashEmbedder
from storage.library import Library

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"

SHOP = "claude-code:5e55e000-1111-4000-8000-000000000001"
SHOP_FILE = ".claude/projects/-home-ana-src-shop/5e55e000-1111-4000-8000-000000000001.jsonl"
CODEX = "codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CODEX_FILE = ".codex/sessions/2025/03/14/rollout-2025-03-14T09-00-00-0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"


@dataclass
class AgentHome:
    home: Path
    library: Library

    def syncer(self, exclusions: Exclusions | None = None, extra_paths: tuple[Path, ...] = ()) -> Syncer:
        return Syncer(self.library, env={}, home=self.home, exclusions=exclusions, extra_paths=extra_paths)

    def path(self, relative: str) -> Path:
        return self.home / relative

    def archived(self, relative: str, format: str) -> Path:
        archive = Archive(self.library.home)
        return archive.path(archive.relative_for(format, self.path(relative)))


def make_agent_home(tmp_path: Path) -> AgentHome:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "claude-code" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex", home / ".codex")
    shutil.copytree(FIXTURES / "gemini", home / ".gemini")
    return AgentHome(home, Library.open(tmp_path / "store", embedder=HashEmbedder()))


def claude_line(uuid: str, parent: str, kind: str, text: str, *, cwd: str = "/home/ana/src/shop") -> str:
    """One Claude Code transcript record of the shop session."""
    message: dict[str, object] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": f"msg_{uuid}", "role": "assistant", "content": [{"type": "text", "text": text}]}
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "cwd": cwd,
        "sessionId": "5e55e000-1111-4000-8000-000000000001",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2025-06-01T09:05:00.000Z",
    }
    return json.dumps(record) + "\n"


def write_session(path: Path, session: str, texts: list[str], cwd: str = "/home/ana/src/other") -> None:
    """A small Claude Code transcript at `path`, alternating user and assistant turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, text in enumerate(texts):
        line = claude_line(f"{session}-{i}", f"{session}-{i - 1}", "user" if i % 2 == 0 else "assistant", text, cwd=cwd)
        lines.append(line.replace("5e55e000-1111-4000-8000-000000000001", session))
    path.write_text("".join(lines), encoding="utf-8")
