"""Time recall and store totals: pages of chats by `updated_at`, the preview shown for each, and
`stats`. Written against `ChatSource`: the catalog (`storage.stores.catalog`), or the catalog less the
chats a delete committed to (`storage.reads.hiding`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from storage.errors import UnknownProject
from storage.query.filters import Filters
from storage.times import utc

if TYPE_CHECKING:  # imported where used: `stats` needs none of these pydantic models (start-up speed)
    from storage.models import Message
    from storage.reads.chat_meta import ConversationMeta
    from storage.reads.results import ChatHit, Match, RecentResult, WrittenWithin


PREVIEW_HEAD = 2  # the opening exchange says what a chat was about
PREVIEW_TAIL = 2  # the last turns say where it ended
WITHIN_CHATS = 3  # chats updated after a window that are named for the messages they hold inside it


def preview_spans(message_count: int) -> list[tuple[int, int]]:
    """Which messages stand for a chat in a listing: its opening exchange and, if longer, its last turns."""
    if message_count == 0:
        return []
    if message_count <= PREVIEW_HEAD + PREVIEW_TAIL:
        return [(0, message_count - 1)]
    return [(0, PREVIEW_HEAD - 1), (message_count - PREVIEW_TAIL, message_count - 1)]


class ChatSource(Protocol):
    """The reads `recent` and `stats` need (`storage.stores.catalog.Catalog`, `storage.reads.hiding.Hiding`)."""

    def timeline(self, filters: Filters) -> list[tuple[datetime, str]]: ...
    def time_page(
        self, filters: Filters, n: int, sort_order: Literal["asc", "desc"]
    ) -> tuple[list[tuple[datetime, str]], bool]: ...
    def metas(self, ids: Sequence[str]) -> dict[str, ConversationMeta]: ...
    def message_windows(self, windows: dict[str, list[tuple[int, int]]]) -> dict[str, list[Message]]: ...
    def message_spans(self, ids: Sequence[str]) -> dict[str, tuple[datetime, datetime]]: ...
    def column_counts(self, column: str) -> dict[str, int]: ...
    def counts(self) -> tuple[int, int, int]: ...
    def pending_count(self) -> int: ...
    def redactions(self) -> dict[str, dict[str, int]]: ...
    def disk_bytes(self) -> int: ...


class RecentSource(Protocol):
    """What the recent_chats tool reads (`storage.library.Library`), named here so that tools need not import it."""

    def recent(
        self,
        *,
        n: int = 3,
        sort_order: Literal["asc", "desc"] = "desc",
        before: datetime | None = None,
        after: datetime | None = None,
        project: str | None = None,
    ) -> RecentResult: ...
    def is_empty(self) -> bool: ...


@dataclass
class StoreStats:
    home: Path
    conversations: int
    messages: int
    chunks: int
    sources: dict[str, int]
    projects: dict[str, int]
    oldest: datetime | None
    newest: datetime | None
    model: str
    disk_bytes: int
    awaiting_embeddings: int = 0
    redacted: dict[str, dict[str, int]] = field(default_factory=dict)  # secrets redacted, per source and kind


def store_stats(source: ChatSource, home: Path, model: str) -> StoreStats:
    conversations, messages, chunks = source.counts()
    times = [t for t, _ in source.timeline(Filters())]
    return StoreStats(
        home=home,
        conversations=conversations,
        messages=messages,
        chunks=chunks,
        sources=source.column_counts("source"),
        projects=source.column_counts("project"),
        oldest=utc(min(times)) if times else None,
        newest=utc(max(times)) if times else None,
        model=model,
        disk_bytes=source.disk_bytes(),
        awaiting_embeddings=source.pending_count(),
        redacted=source.redactions(),
    )


_SEPARATORS = re.compile(r"[\\/]")


def folder_name(project: str) -> str:
    """The last folder of a workspace path, whichever platform wrote it; a plain name as it is."""
    return _SEPARATORS.split(project.rstrip("\\/"))[-1]


def name_projects(hits: Iterable[ChatHit], known: Iterable[str]) -> None:
    """Let each hit's text name its project by the folder's name (`shop-api` for /home/ana/src/shop-api),
    where no other project in `known` (the store's) has a folder of that name: the name that `--project`
    and the tools' `project` take. The structured result keeps the full path."""
    paths_of: dict[str, set[str]] = {}
    for project in known:
        paths_of.setdefault(folder_name(project).casefold(), set()).add(project.casefold())
    for hit in hits:
        if not hit.project:
            continue
        name = folder_name(hit.project)
        if name and name != hit.project and paths_of.get(name.casefold(), set()) <= {hit.project.casefold()}:
            hit._project_name = name


class TouchSource(Protocol):
    def touches(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]: ...


def add_touched(hits: Sequence[ChatHit], source: TouchSource) -> None:
    """Each hit's touched files and commands (`ChatHit.touched`), edits first, as many as a result carries."""
    from storage.reads.results import MAX_TOUCHED, Touched, touched_groups

    found = source.touches([hit.uri for hit in hits])
    for hit in hits:
        every = [Touched(action=action, target=target, times=times) for action, target, times in found.get(hit.uri, [])]
        kept = {group: set(items[: MAX_TOUCHED[group]]) for group, items in touched_groups(every).items()}
        hit.touched = [t for t in every if t.target in kept["edited" if t.action == "created" else t.action]]
        if len(hit.touched) < len(every):
            hit._touched_totals = {group: len(items) for group, items in touched_groups(every).items()}


def project_spellings(source: ChatSource, project: str | None) -> tuple[str, ...] | None:
    """Every stored spelling of `project`, matched case-insensitively (raises UnknownProject).

    A name without a folder separator also matches the workspaces of that folder name, as the
    agents show them (`vite` is `/home/ana/src/vite` and Cursor's `c:\\Users\\ana\\vite`)."""
    if project is None:
        return None
    known = source.column_counts("project")
    wanted = project.casefold()
    bare = not _SEPARATORS.search(project)
    names = tuple(sorted(p for p in known if p.casefold() == wanted or (bare and folder_name(p).casefold() == wanted)))
    if not names:
        raise UnknownProject(project, sorted(known, key=str.casefold))
    return names


def recent_page(
    source: ChatSource,
    *,
    n: int,
    sort_order: Literal["asc", "desc"],
    before: datetime | None,
    after: datetime | None,
    project: str | None,
    source_name: str | None = None,
) -> RecentResult:
    """Chats by `updated_at`; `before`/`after` are exclusive bounds and page through history.

    A page never splits chats that share an `updated_at`, so the next page's bound loses nothing.
    `source_name`: only chats from that source (as stored).
    """
    from storage.reads.chat_meta import chat_hit
    from storage.reads.results import RecentResult

    projects = project_spellings(source, project)
    filters = Filters(project=projects, source=source_name, after=after, before=before)
    page, more = source.time_page(filters, n, sort_order)
    metas = source.metas([cid for _, cid in page])
    spans = {cid: preview_spans(meta.message_count) for cid, meta in metas.items()}
    messages = source.message_windows(spans)
    times = source.message_spans(list(metas))
    chats = [
        chat_hit(metas[cid], preview(spans[cid], messages.get(cid, [])), span=times.get(cid))
        for _, cid in page
        if cid in metas
    ]
    within = written_within(source, Filters(project=projects, source=source_name), after, before)
    notes: list[str] = []
    if len(page) > n:
        notes.append(f"{len(page)} chats shown rather than {n}: they share an updated_at with the last one")
    last = metas[page[-1][1]].updated_at if page and page[-1][1] in metas else None
    name_projects(chats, source.column_counts("project"))
    result = RecentResult(
        chats=chats,
        sort_order=sort_order,
        next_before=last if more and sort_order == "desc" else None,
        next_after=last if more and sort_order == "asc" else None,
        notes=notes,
    )
    result._within = within
    return result


def written_within(
    source: ChatSource, filters: Filters, after: datetime | None, before: datetime | None
) -> list[WrittenWithin]:
    """A line for each chat (at most `WITHIN_CHATS`, the nearest first) last updated at or after `before`
    with messages written between `after` and `before`: a page holds the chats last updated in the window,
    and a long chat updated the day after would otherwise hide the day's ~50 messages. These are named
    beside the page, not in it, so that paging by `updated_at` still shows each chat once."""
    from storage.reads.results import WrittenWithin

    if before is None:
        return []
    try:
        just_before = before - timedelta(microseconds=1)
    except OverflowError:  # a window ending at the first moment there is holds no message
        return []
    later = source.timeline(replace(filters, after=just_before, before=None))
    ids = [cid for _, cid in sorted(later)]
    spans = source.message_spans(ids)
    inside = [
        cid for cid in ids if cid in spans and spans[cid][0] < before and (after is None or spans[cid][1] > after)
    ]
    if not inside:
        return []
    metas = source.metas(inside[:WITHIN_CHATS])
    messages = source.message_windows({cid: [(0, max(meta.message_count - 1, 0))] for cid, meta in metas.items()})
    lines: list[WrittenWithin] = []
    for cid in inside[:WITHIN_CHATS]:
        written = [
            m.index + 1
            for m in messages.get(cid, [])
            if m.created_at is not None and m.created_at < before and (after is None or m.created_at > after)
        ]
        if cid not in metas or not written:
            continue
        meta = metas[cid]
        updated = utc(meta.updated_at).date().isoformat()
        lines.append(WrittenWithin(uri=meta.id, title=meta.title, updated=updated, numbers=written))
    return lines


def page_by_time(
    timeline: list[tuple[datetime, str]], n: int, sort_order: Literal["asc", "desc"]
) -> tuple[list[tuple[datetime, str]], bool]:
    """The first `n` entries in time order, extended so that no group of equal times is split.

    Returns the page and whether anything is left after it.
    """
    ordered = sorted(timeline, reverse=sort_order == "desc")
    if len(ordered) <= n:
        return ordered, False
    end = n
    while end < len(ordered) and ordered[end][0] == ordered[n - 1][0]:
        end += 1
    return ordered[:end], end < len(ordered)


def preview(spans: list[tuple[int, int]], messages: list[Message]) -> list[Match]:
    from storage.reads.chat_meta import shown
    from storage.reads.results import Match

    by_index = {m.index: m for m in messages}
    return [
        Match(
            message_ids=[],
            first_index=first,
            last_index=last,
            messages=[shown(by_index[i], set()) for i in range(first, last + 1) if i in by_index],
        )
        for first, last in spans
    ]
