"""`pastchats import`: read sources through the importers, upsert into the library, summarise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from importers import registry
from importers.sources.report import SourceSummary
from server.services.progress import progress

if TYPE_CHECKING:
    from importers.sources.privacy import Exclusions
    from storage.library import Library
    from storage.models import Conversation
    from storage.writing.ingest import IngestProgress


@contextmanager
def sample_path() -> Iterator[Path]:
    """The sample chats shipped inside the wheel (importers/sample/sample_chats.jsonl)."""
    with as_file(files("importers") / "sample" / "sample_chats.jsonl") as path:
        yield path


@contextmanager
def progress_reporter(
    enabled: bool, label: str, *, stream: TextIO | None = None, every: float | None = None
) -> Iterator[Callable[[IngestProgress], None] | None]:
    """Chats read so far and the time taken, on stderr (`stream`): a live line on a terminal, a line
    every `every` seconds elsewhere, through the indexing that ends the import as well.

    A streamed source's total is not known until it has been read; the embedding that follows shows
    done/total and an ETA.
    """
    with progress(f"importing {label}", "chats", enabled=enabled, stream=stream, every=every) as report:
        if report is None:
            yield None
            return

        def update(done: IngestProgress) -> None:
            report(done.conversations_done, None)

        yield update


def import_source(
    library: Library,
    path: Path,
    format: str | None,
    show_progress: bool,
    label: str | None = None,
    exclusions: Exclusions | None = None,
) -> SourceSummary:
    """Raises `SourceError` (unreadable source) or `StoreError` (store busy, model missing).

    An explicit import is deliberate: chats the user deleted earlier come back (and sync may update them
    again); the exclusion settings still apply.
    """
    from importers.sources.privacy import unforget  # deferred: pulls in lancedb (start-up speed)

    conversations, report = registry.read(path, format)
    if exclusions is not None:
        conversations = exclusions.filter(conversations, report)
    imported: list[str] = []

    def remembered() -> Iterator[Conversation]:
        for conversation in conversations:
            imported.append(conversation.id)
            yield conversation

    with progress_reporter(show_progress, path.name) as progress:
        stats = library.import_conversations(
            remembered(), progress=progress, embed=False, add_only=registry.foreign_prefixes(report.format)
        )
    unforget(library, imported)
    summary = SourceSummary(path=label or str(path), format=report.format, notes=list(report.notes))
    summary.conversations_skipped += report.skipped
    summary.record(stats)
    return summary


def summary_text(summaries: list[SourceSummary]) -> str:
    lines = [summary.text() for summary in summaries]
    if len(summaries) > 1:
        total = totals(summaries)
        lines.append(
            f"Total: {total['new']} new, {total['updated']} updated, {total['unchanged']} unchanged, "
            f"{total['skipped']} skipped · {total['messages']} messages indexed"
        )
    return "\n".join(lines)


def totals(summaries: list[SourceSummary]) -> dict[str, Any]:
    return {
        "new": sum(s.conversations_new for s in summaries),
        "updated": sum(s.conversations_updated for s in summaries),
        "unchanged": sum(s.conversations_unchanged for s in summaries),
        "skipped": sum(len(s.conversations_skipped) for s in summaries),
        "messages": sum(s.messages for s in summaries),
    }
