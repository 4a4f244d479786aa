"""Shared fixtures for importer tests: the committed fixture files, reading everything, zipping."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from importers.base import Importer, ImportReport
from storage.models import Conversation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"

ReadAll = Callable[[Importer, Path], tuple[list[Conversation], ImportReport]]


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def read_all() -> ReadAll:
    def read(importer: Importer, path: Path) -> tuple[list[Conversation], ImportReport]:
        report = ImportReport(path=path)
        return list(importer.read(path, report)), report

    return read


@pytest.fixture
def zip_dir(tmp_path: Path) -> Callable[[Path, str], Path]:
    """Zip a fixture folder into tmp_path, optionally under a top folder (as some exports are)."""

    def make(source: Path, top: str = "") -> Path:
        target = tmp_path / f"{source.name}.zip"
        with zipfile.ZipFile(target, "w") as archive:
            for file in sorted(source.rglob("*")):
                if file.is_file():
                    archive.write(file, f"{top}{file.relative_to(source)}")
        return target

    return make


def build_vscdb(path: Path, tables: dict[str, dict[str, object] | None]) -> Path:
    """A Cursor-shaped SQLite file from `{table: {key: value}}`; values are stored as JSON text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    with connection:
        for table, rows in tables.items():
            if rows is None:
                continue
            connection.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            for key, value in rows.items():
                text = value if isinstance(value, str) else json.dumps(value)
                connection.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, text))
    connection.close()
    return path


@pytest.fixture
def cursor_user_dir(tmp_path: Path) -> Path:
    """A Cursor `User` folder: global composer storage plus one workspace with legacy chat tabs."""
    user = tmp_path / "Cursor" / "User"
    build_vscdb(user / "globalStorage" / "state.vscdb", json.loads((FIXTURES / "cursor" / "global.json").read_text()))
    workspace = user / "workspaceStorage" / "4f2a9c"
    build_vscdb(workspace / "state.vscdb", json.loads((FIXTURES / "cursor" / "workspace.json").read_text()))
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///home/ana/src/auth%20service"}))
    return user
