from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from importers import registry
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.models import Conversation, Message
from storage.reads.export import export
from tests.importers.sources.agent_home import make_agent_home

if TYPE_CHECKING:
    from storage.reads.export import ExportFormat

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "chats.jsonl"

AWKWARD = Conversation(
    id="odd:1",
    source="pastchats",
    title='Quotes " and </chat> and ünïcödé ✓',
    created_at=datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC),
    updated_at=datetime(2024, 3, 1, 0, 0, 1, tzinfo=UTC),
    project=None,
    url="https://example.com/c/1?x=1&y=2",
    messages=[
        Message(id="a", index=0, role="system", text="", created_at=None),
        Message(id="b", index=1, role="user", text="line one\n\nline three\ttab 日本語", created_at=None),
        Message(id="c", index=2, role="tool", text='{"json": [1, 2]}', created_at=datetime(2024, 3, 1, tzinfo=UTC)),
    ],
)


@pytest.fixture
def library(tmp_path: Path) -> Library:
    agents = make_agent_home(tmp_path)
    agents.syncer().run_once()
    conversations, _ = registry.read(CORPUS)
    agents.library.import_conversations([*conversations, AWKWARD])
    return agents.library


def everything(library: Library) -> list[Conversation]:
    return sorted(library.iter_conversations(), key=lambda c: c.id)


@pytest.mark.parametrize("format", ["jsonl", "json"])
def test_importing_an_export_into_a_fresh_store_gives_back_the_same_chats(
    library: Library, tmp_path: Path, format: ExportFormat
) -> None:
    out = tmp_path / f"export.{format}"
    with out.open("w", encoding="utf-8") as handle:
        count = export(library, handle, format=format)
    assert count == library.stats().conversations

    fresh = Library.open(tmp_path / "fresh", embedder=HashEmbedder())
    conversations, report = registry.read(out)
    stats = fresh.import_conversations(conversations)

    assert report.format == "plain"
    assert (stats.new, report.skipped) == (count, [])
    assert everything(fresh) == everything(library)
    assert fresh.get("odd:1") == AWKWARD


def test_an_export_holds_only_the_project_or_source_asked_for(library: Library, tmp_path: Path) -> None:
    out = tmp_path / "codex.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        assert export(library, handle, source="codex") == 2
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["source"] for r in records} == {"codex"}
    assert set(records[0]) == {"id", "title", "created_at", "updated_at", "project", "url", "source", "messages"}
    assert set(records[0]["messages"][0]) == {"id", "role", "text", "created_at"}

    with out.open("w", encoding="utf-8") as handle:
        assert export(library, handle, project="/home/ana/src/api") == 1
