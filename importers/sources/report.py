"""What one import or sync did, in one shape: chats new/updated/unchanged, what was skipped and why.

`Outcome` is the part both share; `SourceSummary` adds the source read by `pastchats import`,
`SyncReport` the files sync looked at. Every skipped thing is an `importers.base.Skip`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from importers.base import Skip

if TYPE_CHECKING:
    from storage.writing.ingest import IngestStats

__all__ = ["Change", "Outcome", "SourceSummary", "SyncReport", "listed", "noted"]

Change = Literal["new", "grown", "edited", "unchanged"]
MAX_LISTED = 10


def listed(label: str, skips: list[Skip]) -> list[str]:
    """The first few skips as indented lines, and how many more there are."""
    lines = [f"  {label} {skip.where}: {skip.reason}" for skip in skips[:MAX_LISTED]]
    if len(skips) > MAX_LISTED:
        lines.append(f"  ... and {len(skips) - MAX_LISTED} more {label} (see --json)")
    return lines


def noted(notes: list[str]) -> list[str]:
    """The first few notes as indented lines, and how many more there are."""
    lines = [f"  note: {note}" for note in notes[:MAX_LISTED]]
    if len(notes) > MAX_LISTED:
        lines.append(f"  ... and {len(notes) - MAX_LISTED} more notes (see --json)")
    return lines


@dataclass(kw_only=True)
class Outcome:
    conversations_new: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped: list[Skip] = field(default_factory=list)
    messages: int = 0
    chunks_embedded: int = 0
    secrets_redacted: dict[str, int] = field(default_factory=dict)  # by kind, in the chats written
    notes: list[str] = field(default_factory=list)

    def record(self, stats: IngestStats) -> None:
        """Add what the store did with the conversations (the store's own skips are "store" skips)."""
        self.conversations_new += stats.new
        self.conversations_updated += stats.updated
        self.conversations_unchanged += stats.unchanged
        self.messages += stats.messages
        self.chunks_embedded += stats.chunks_embedded
        redacted = Counter(self.secrets_redacted) + stats.redacted
        self.secrets_redacted = dict(redacted.most_common())
        self.conversations_skipped += [Skip("store", reason) for reason in stats.skipped]
        self.notes += [note for note in stats.notes if note not in self.notes]

    def counts(self) -> str:
        text = (
            f"{self.conversations_new} new, {self.conversations_updated} updated, "
            f"{self.conversations_unchanged} unchanged, {len(self.conversations_skipped)} skipped"
        )
        if self.secrets_redacted:
            kinds = ", ".join(f"{kind} {n}" for kind, n in self.secrets_redacted.items())
            text += f" · {sum(self.secrets_redacted.values())} secrets redacted ({kinds})"
        return text


@dataclass(kw_only=True)
class SourceSummary(Outcome):
    """One source read by `pastchats import`."""

    path: str
    format: str

    def text(self) -> str:
        lines = [f"{self.path} ({self.format}): {self.counts()} · {self.messages} messages indexed"]
        lines += listed("skipped", self.conversations_skipped)
        return "\n".join(lines + [f"  note: {note}" for note in self.notes])


@dataclass(kw_only=True)
class SyncReport(Outcome):
    """One sync of the agent logs on this machine."""

    files_seen: int = 0
    files_new: int = 0
    files_grown: int = 0
    files_edited: int = 0
    files_unchanged: int = 0
    files_excluded: int = 0
    files_waiting: list[str] = field(default_factory=list)  # being written: read once their last line ends
    files_failed: list[Skip] = field(default_factory=list)
    archived_bytes: int = 0
    not_run: str | None = None

    def count(self, change: Change) -> None:
        if change == "new":
            self.files_new += 1
        elif change == "grown":
            self.files_grown += 1
        elif change == "edited":
            self.files_edited += 1
        else:
            self.files_unchanged += 1

    @property
    def files_changed(self) -> int:
        return self.files_new + self.files_grown + self.files_edited

    def text(self) -> str:
        if self.not_run:
            return f"Sync skipped: {self.not_run}"
        waiting = f", {len(self.files_waiting)} being written" if self.files_waiting else ""
        lines = [
            f"Files: {self.files_seen} seen · {self.files_new} new, {self.files_grown} grown, "
            f"{self.files_edited} edited, {self.files_unchanged} unchanged, {self.files_excluded} excluded, "
            f"{len(self.files_failed)} failed{waiting}",
            f"Chats: {self.counts()} · {self.chunks_embedded} passages embedded",
        ]
        lines += listed("failed", self.files_failed) + listed("skipped", self.conversations_skipped)
        return "\n".join(lines + noted(self.notes))
