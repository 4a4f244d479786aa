"""Which importers exist, and which one reads a given path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from importers.base import Importer, ImportReport, SourceError
from importers.plain import PlainImporter
from storage.models import Conversation

# Order matters for detection: specific formats first, the lenient plain format last.
IMPORTERS: list[Importer] = [PlainImporter()]


def names() -> list[str]:
    return [importer.name for importer in IMPORTERS]


def get(name: str) -> Importer:
    for importer in IMPORTERS:
        if importer.name == name:
            return importer
    raise SourceError(f"unknown format {name!r}; known formats: {', '.join(names())}")


def detect(path: Path) -> Importer:
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    for importer in IMPORTERS:
        if importer.detect(path):
            return importer
    raise SourceError(
        f"cannot tell what kind of chat history {path} is; pass --format (one of: {', '.join(names())})"
    )


def read(path: Path, format: str | None = None) -> tuple[Iterator[Conversation], ImportReport]:
    """Open a source. The iterator streams conversations; the report fills in as it is consumed."""
    importer = get(format) if format else detect(path)
    report = ImportReport(path=path, format=importer.name)
    return importer.read(path, report), report
