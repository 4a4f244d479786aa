"""`pastchats import`: read sources through the importers, upsert into the library, summarise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from importers import registry

if TYPE_CHECKING:
    from importers.sources.privacy import Exclusions
    from storage.ingest import IngestProgress
    from storage.library import Library
    from storage.models import Conversation

MAX_LISTED_SKIPS = 10


@contextmanager
def sample_path() -> Iterator[Path]:
    """The sample chats shipped inside the wheel (importers/sample/sample_chats.jsonl)."""
    with as_file(files("importers") / "sample" / "sample_chats.jsonl") as path:
        yield path


@dataclass
class SourceSummary:
    path: str
    format: str
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        counts = f"{self.new} new, {self.updated} updated, {self.unchanged} unchanged, {len(self.skipped)} skipped"
        return f"{self.path} ({self.format}): {counts} · {self.messages} messages indexed"


@contextmanager
def progress_reporter(enabled: bool, label: str) -> Iterator[Callable[[IngestProgress], None] | None]:
    """A live counter on stderr for long imports (only on a terminal); never on stdout."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    # deferred: rich's progress machinery is only needed on a terminal (start-up speed)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"importing {label}")

        def update(done: IngestProgress) -> None:
            bar.update(
                task,
                description=f"importing {label}: {done.conversations_done} chats, {done.messages_done} messages",
            )

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

    summary = SourceSummary(path=label or str(path), format=report.format)
    with progress_reporter(show_progress, path.name) as progress:
        stats = library.import_conversations(remembered(), progress=progress)
    unforget(library, imported)
    summary.format = report.format
    summary.new, summary.updated, summary.unchanged = stats.new, stats.updated, stats.unchanged
    summary.messages = stats.messages
    summary.skipped = [{"where": s.where, "reason": s.reason} for s in report.skipped]
    summary.skipped += [{"where": "store", "reason": reason} for reason in stats.skipped]
    summary.notes = list(report.notes)
    return summary


def summary_text(summaries: list[SourceSummary]) -> str:
    lines: list[str] = []
    for summary in summaries:
        lines.append(summary.line())
        for skip in summary.skipped[:MAX_LISTED_SKIPS]:
            lines.append(f"  skipped {skip['where']}: {skip['reason']}")
        if len(summary.skipped) > MAX_LISTED_SKIPS:
            lines.append(f"  ... and {len(summary.skipped) - MAX_LISTED_SKIPS} more skipped (see --json)")
        lines.extend(f"  note: {note}" for note in summary.notes)
    if len(summaries) > 1:
        total = totals(summaries)
        lines.append(
            f"Total: {total['new']} new, {total['updated']} updated, {total['unchanged']} unchanged, "
            f"{total['skipped']} skipped · {total['messages']} messages indexed"
        )
    return "\n".join(lines)


def totals(summaries: list[SourceSummary]) -> dict[str, Any]:
    return {
        "new": sum(s.new for s in summaries),
        "updated": sum(s.updated for s in summaries),
        "unchanged": sum(s.unchanged for s in summaries),
        "skipped": sum(len(s.skipped) for s in summaries),
        "messages": sum(s.messages for s in summaries),
    }
