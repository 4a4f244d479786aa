"""What one sync did: files seen and how each changed, chats imported or skipped, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Change = Literal["new", "grown", "edited", "unchanged"]
MAX_LISTED = 10


@dataclass
class Problem:
    where: str
    reason: str


@dataclass
class SyncReport:
    files_seen: int = 0
    files_new: int = 0
    files_grown: int = 0
    files_edited: int = 0
    files_unchanged: int = 0
    files_excluded: int = 0
    files_failed: list[Problem] = field(default_factory=list)
    conversations_new: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    conversations_skipped: list[Problem] = field(default_factory=list)
    messages: int = 0
    chunks_embedded: int = 0
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
        lines = [
            f"Files: {self.files_seen} seen · {self.files_new} new, {self.files_grown} grown, "
            f"{self.files_edited} edited, {self.files_unchanged} unchanged, {self.files_excluded} excluded, "
            f"{len(self.files_failed)} failed",
            f"Chats: {self.conversations_new} new, {self.conversations_updated} updated, "
            f"{self.conversations_unchanged} unchanged, {len(self.conversations_skipped)} skipped · "
            f"{self.chunks_embedded} passages embedded",
        ]
        for label, problems in (("failed", self.files_failed), ("skipped", self.conversations_skipped)):
            lines += [f"  {label} {p.where}: {p.reason}" for p in problems[:MAX_LISTED]]
            if len(problems) > MAX_LISTED:
                lines.append(f"  ... and {len(problems) - MAX_LISTED} more {label} (see --json)")
        return "\n".join(lines)
