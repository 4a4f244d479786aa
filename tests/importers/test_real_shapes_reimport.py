"""Importing any real-shape fixture a second time adds and changes nothing."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from importers import registry
from importers.aider import AiderImporter
from tests.agent_fixtures import FIXTURES, session_folders

from .conftest import build_vscdb
from .test_amazon_q import amazon_q_database

# The exports', Cursor's (its databases' rows) and a second Aider history; every agent's fixture folders,
# as it finds sessions in them (`tests.agent_fixtures`), follow.
OTHERS = [
    ("aider/interrupted", "aider"),
    ("chatgpt-2025/export", None),
    ("chatgpt-2025/conversation-68b0c1d2.json", None),
    ("claude-branches", None),
    ("cursor-versions", "cursor"),
    ("cursor-2025-05", "cursor"),
    ("cursor-2026", "cursor"),
    ("amazon-q/rows.json", "amazon-q"),
    ("amazon-q/kiro-rows.json", "kiro-cli"),
]
AGENTS = [
    (str(folder.relative_to(FIXTURES)), importer.name)
    for importer in registry.AGENT_LOGS
    for folder in session_folders(importer)
]
SOURCES = [*OTHERS, *AGENTS]


@pytest.mark.parametrize(("source", "format"), SOURCES)
def test_reimporting_a_real_shape_fixture_adds_nothing(
    source: str, format: str | None, fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    path = fixtures / source
    importer = AiderImporter(tz=UTC) if format == "aider" else None
    if format == "cursor":  # a global database, from its rows
        path = build_vscdb(tmp_path / "state.vscdb", json.loads(next(path.glob("global*.json")).read_text()))
    if format in {"amazon-q", "kiro-cli"}:  # Amazon Q's and Kiro CLI's database, from its rows
        path = amazon_q_database(fixtures, tmp_path / format / "data.sqlite3", source)

    first = import_fixture(path, format, importer=importer)
    again = import_fixture(path, format, importer=importer, library=first.library)

    assert first.conversations
    assert f"0 new, 0 updated, {len(first.conversations)} unchanged" in again.summary
    assert again.conversations == first.conversations
