"""What the user keeps out of pastchats, and how they take things out again.

- `Exclusions`: projects, source-file paths and sources never to import (applied by sync, and by any
  import that passes conversations through `Exclusions.filter`). Excluding something does not remove
  what is already indexed: `forget` does that.
- The opt-out marker (a line `pastchats: do-not-index` in any message) is applied by
  `importers.registry.read`, which every import and sync goes through.
- `delete` / `forget` remove conversations from every index and from the archive, and remember their
  ids as forgotten so a later sync does not bring them back. Importing a file explicitly
  (`pastchats import FILE`) is a deliberate act: it imports them again (call `unforget` for its ids).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import unquote, urlparse

from pydantic import BaseModel, ConfigDict, Field

from importers.base import ImportReport
from importers.sources.archive import Archive
from importers.sources.sync_state import SyncState
from storage.library import Library
from storage.models import Conversation, content_hash
from storage.query.filters import Filters

__all__ = ["EXCLUDED", "Exclusions", "delete", "finish", "finish_deletes", "forget", "matching", "unforget"]

EXCLUDED = "excluded by settings"


class Exclusions(BaseModel):
    """Patterns are shell globs (`*`, `?`, `[...]`; `*` also crosses `/`), matched case-sensitively;
    a plain name matches exactly. A leading `~/` in a path pattern is the user's home directory."""

    model_config = ConfigDict(frozen=True)

    projects: tuple[str, ...] = Field(default=(), description="Project or workspace names/paths never imported.")
    paths: tuple[str, ...] = Field(default=(), description="Source files never read, e.g. `~/work/secret/*`.")
    sources: tuple[str, ...] = Field(default=(), description="Whole sources never imported, e.g. `cursor`.")

    def expanded(self, home: Path) -> Exclusions:
        paths = tuple(str(home / p[2:]) if p.startswith("~/") else p for p in self.paths)
        return self.model_copy(update={"paths": paths})

    def fingerprint(self) -> str:
        return content_hash(json.dumps(self.model_dump(mode="json"), sort_keys=True))

    def excludes_source(self, source: str) -> bool:
        return any(fnmatchcase(source, pattern) for pattern in self.sources)

    def excludes_path(self, path: Path | str) -> bool:
        text = Path(path).as_posix()
        return any(fnmatchcase(text, pattern) for pattern in self.paths)

    def excludes(self, conversation: Conversation) -> bool:
        """Whether the conversation's source, project, or source file (a `file:` url) is excluded."""
        if self.excludes_source(conversation.source):
            return True
        if conversation.project and any(fnmatchcase(conversation.project, p) for p in self.projects):
            return True
        url = conversation.url or ""
        return bool(self.paths) and url.startswith("file:") and self.excludes_path(unquote(urlparse(url).path))

    def filter(self, conversations: Iterable[Conversation], report: ImportReport) -> Iterator[Conversation]:
        """The conversations not excluded; the others are reported as skipped."""
        for conversation in conversations:
            if self.excludes(conversation):
                report.skip(conversation.id, EXCLUDED)
            else:
                yield conversation


def delete(library: Library, uris: Iterable[str], *, wait: float = -1) -> list[str]:
    """Remove conversations from every index and from the archive; returns the ids that existed.

    An archive copy is removed once no remaining conversation was imported from it (a Cursor database
    holds many). Every deleted id is remembered as forgotten, so sync never imports it again.

    Crash-atomic in two commits, storage's first: `Library.commit_delete` journals the ids, so from then
    on whoever opens the store next (any command or server) removes them, and keeps them listed until
    the sync state below has them; then one write of the sync state forgets them and names them as
    still to remove. Killed before the first commit, nothing has changed; after it, the chats are gone
    at the next open and never synced again (`finish_deletes` takes storage's list into the state).
    """
    ids = list(dict.fromkeys(uris))
    with library.lock.hold(timeout=wait):
        state = SyncState.load(library.home)
        finish_deletes(library, state)
        existing = sorted(library.chats.metas(ids))
        archived = state.archive_index()
        found = sorted(set(existing) | {cid for cid in ids if cid in archived})
        if not found:
            return []
        library.commit_delete(found)
        state.forget(found)
        state.deleting = sorted(set(state.deleting) | set(found))
        state.save(library.home)
        finish_deletes(library, state)
        return found


def finish_deletes(library: Library, state: SyncState) -> None:
    """Remove what a committed delete named (rows first, then archive copies), then clear the list.

    Ids storage finished deleting for a killed delete are forgotten first, so sync never brings them
    back. Callers hold the write lock. Safe to repeat: every step is idempotent.
    """
    owed = set(library.unfinished_deletes()) - set(state.deleting)
    if owed:
        state.forget(sorted(owed))
        state.deleting = sorted(set(state.deleting) | owed)
        state.save(library.home)
    if not state.deleting:
        return
    gone = set(state.deleting)
    library.delete(sorted(gone))
    archive = Archive(library.home)
    for mark in state.files.values():
        if gone.intersection(mark.conversations):
            mark.conversations = [cid for cid in mark.conversations if cid not in gone]
            if mark.archive and not mark.conversations:
                archive.remove(mark.archive)
                mark.archive = None
    state.deleting = []
    state.save(library.home)


def finish(library: Library, *, wait: float = -1) -> None:
    """Complete every delete committed to the journal and not finished (one cut short). Also drops the
    table versions that still hold the deleted text, when no reader needs them."""
    with library.lock.hold(timeout=wait):  # taking the lock removes the rows (`Library._finish_deletes`)
        finish_deletes(library, SyncState.load(library.home))
        library.prune()


def matching(
    library: Library, *, project: str | None = None, source: str | None = None, before: datetime | None = None
) -> list[str]:
    """Ids of the conversations `forget` would remove (all criteria must hold; at least one is needed)."""
    if project is None and source is None and before is None:
        raise ValueError("say what to forget: a project, a source, or a date")
    filters = Filters(project=project, source=source, before=before)
    return library.store.conversation_ids(filters.sql() or None)


def forget(
    library: Library,
    *,
    project: str | None = None,
    source: str | None = None,
    before: datetime | None = None,
    wait: float = -1,
) -> int:
    """Delete every conversation in `project` / from `source` / last updated before `before`."""
    return len(delete(library, matching(library, project=project, source=source, before=before), wait=wait))


def unforget(library: Library, ids: Iterable[str], *, wait: float = -1) -> None:
    """Let sync import these ids again (after the user imported them deliberately)."""
    wanted = list(ids)
    with library.lock.hold(timeout=wait):
        state = SyncState.load(library.home)
        if set(wanted).intersection(state.forgotten):
            state.unforget(wanted)
            state.save(library.home)
