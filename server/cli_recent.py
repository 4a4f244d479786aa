"""`pastchats recent` as text, from a current catalog without pydantic (start-up speed).

The recent_chats tool builds pydantic models (`storage.recent.recent_page`, `tools.budget.fit_recent`)
and renders them with `tools.render`; building and importing them is most of what `recent` cost. This
module takes the same steps on plain objects with the same attribute names, and renders them with the
same `tools.render` functions, so the text is the tool's byte for byte (tests run both on the same
stores and arguments). Whenever the tool would raise (an unknown project, an empty store, an empty
window) it answers None and the caller runs the tool itself, which words the error.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

from storage.catalog_read import CHAT_COLUMNS, counts, preview_spans, state
from storage.times import clamp, naive_utc, utc
from tools.render import chat_block, document, quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

# As tools.budget and tools.recent_listing word and size them.
CUT = "[…]"
MIN_CAP = 80
MAX_HINTS = 5
EMPTY = "No chats in that time window (when paging: this was the last page). Widen it, or drop the project filter."
_EPOCH = datetime(1970, 1, 1)


def _time(us: int) -> datetime:
    return (_EPOCH + timedelta(microseconds=us)).replace(tzinfo=UTC)


def _us(value: datetime) -> int:
    return (naive_utc(value) - _EPOCH) // timedelta(microseconds=1)


class Shown:
    """A `ShownMessage`'s fields."""

    def __init__(self, mid: str, index: int, role: str, text: str, created_at: datetime | None):
        self.id, self.index, self.number, self.role = mid, index, index + 1, role
        self.text, self.created_at = text, created_at
        self.matched = False
        self.truncated = False


class Hit:
    """A `ChatHit`'s fields, its matches as lists of messages (one per preview span)."""

    def __init__(self, row: sqlite3.Row, groups: list[list[Shown]]):
        self.uri, self.title, self.url = row["id"], row["title"], row["url"]
        self.source, self.project = row["source"], row["project"]
        self.created_at, self.updated_at = _time(row["created"]), _time(row["updated"])
        spanned = row["first_message"] is not None
        self.first_message_at = _time(row["first_message"]) if spanned else None
        self.last_message_at = _time(row["last_message"]) if spanned else None
        self.message_count = row["message_count"]
        self.strength = None
        self.groups = groups


def _clip(text: str, limit: int) -> tuple[str, bool]:
    """`tools.budget.clip` without a focus (a listing matches nothing)."""
    if len(text) <= limit:
        return text, False
    end = min(len(text), limit)
    return text[:end].strip() + (f" {CUT}" if end < len(text) else ""), True


def _clipped(hit: Hit, cap: int) -> Hit:
    groups = []
    for group in hit.groups:
        shown = []
        for message in group:
            text, cut = _clip(message.text, cap // 2)  # no message in a listing matched: half the cap
            if cut:
                message = Shown(message.id, message.index, message.role, text, message.created_at)
                message.truncated = True
            shown.append(message)
        groups.append(shown)
    clipped = object.__new__(Hit)
    clipped.__dict__.update(hit.__dict__, groups=groups)
    return clipped


def _page(connection: sqlite3.Connection, n: int, desc: bool, where: str, args: list[object]) -> tuple[list[Hit], bool]:
    """`storage.recent.page_by_time` and the preview of each chat on the page."""
    timeline = connection.execute(f"SELECT updated, id FROM chats{where}", args).fetchall()  # placeholders only
    ordered = sorted(((int(u), str(i)) for u, i in timeline), reverse=desc)
    end, more = len(ordered), False
    if len(ordered) > n:
        end = n
        while end < len(ordered) and ordered[end][0] == ordered[n - 1][0]:
            end += 1
        more = end < len(ordered)
    ids = [cid for _, cid in ordered[:end]]
    rows = {}
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ", ".join("?" * len(batch))
        found = connection.execute(f"SELECT {CHAT_COLUMNS} FROM chats WHERE id IN ({marks})", batch)
        rows.update({row["id"]: row for row in found})
    hits = []
    for cid in ids:
        row = rows[cid]
        by_index = {
            index: Shown(mid, index, role, text, None if created is None else _time(created))
            for mid, index, role, text, created in json.loads(row["preview"])
        }
        spans = preview_spans(row["message_count"])
        groups = [[by_index[i] for i in range(a, b + 1) if i in by_index] for a, b in spans]
        hits.append(Hit(row, groups))
    return hits, more


def _render(hits: list[Hit], notes: list[str]) -> str:
    if not hits:
        return document([EMPTY], notes)
    return document([chat_block(hit, hit.groups) for hit in hits], notes)  # type: ignore[arg-type]  # ChatHit's fields


def recent_text(
    connection: sqlite3.Connection,
    budget: int,
    *,
    n: int,
    sort_order: Literal["asc", "desc"],
    before: datetime | None,
    after: datetime | None,
    project: str | None,
) -> str | None:
    """The recent_chats tool's text, or None where the tool itself must answer (it raises there)."""
    after, before = utc(after), utc(before)
    if after is not None and before is not None and after >= before:
        return None
    project = project.strip() or None if project is not None else None
    clauses: list[str] = []
    args: list[object] = []
    if project is not None:
        rows = connection.execute("SELECT value FROM column_counts WHERE kind = 'project'")
        names = sorted(p for (p,) in rows if p.casefold() == project.casefold())
        if not names:
            return None
        clauses.append(f"project IN ({', '.join('?' * len(names))})")
        args += names
    if after is not None:
        clauses.append("updated > ?")
        args.append(_us(clamp(after)))
    if before is not None:
        clauses.append("updated < ?")
        args.append(_us(clamp(before)))
    connection.row_factory = sqlite3.Row
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    hits, more = _page(connection, n, sort_order == "desc", where, args)
    if not hits and counts(state(connection))[0] == 0:
        return None  # the empty store's error, which the tool words
    notes = []
    if len(hits) > n:
        notes.append(f"{len(hits)} chats shown rather than {n}: they share an updated_at with the last one")
    last = hits[-1].updated_at if hits and more else None
    return _fit(hits, notes, last, sort_order, budget)


def _fit(hits: list[Hit], base_notes: list[str], last: datetime | None, sort_order: str, budget: int) -> str:
    """`tools.budget.fit_recent`: fewer chats, then shorter messages, until the text fits."""
    from storage.times import iso_z

    chats = list(hits)
    cap = max(MIN_CAP, min(400, budget // (max(1, len(chats)) * 3)))
    boundary: datetime | None = None
    while True:
        shown = [_clipped(hit, cap) for hit in chats]
        notes = list(base_notes)
        if boundary is not None:
            notes.append("Fewer chats than asked were shown, to fit the size budget.")
        hints = []
        for hit in shown:
            cut = next((m for group in hit.groups for m in group if m.truncated), None)
            if cut is not None:
                hints.append(f"{quoted(hit.title)}: read_chat(uri={quoted(hit.uri)}, around={cut.number})")
        if hints:
            listed = "; ".join(hints[:MAX_HINTS])
            listed += f"; and {len(hints) - MAX_HINTS} more" if len(hints) > MAX_HINTS else ""
            notes.append(f"Messages marked {CUT} were shortened; read them in full: {listed}.")
        following = boundary if boundary is not None else last
        if following is not None and sort_order == "desc":
            notes.append(f"Older chats: recent_chats(before={quoted(iso_z(following))}).")
        elif following is not None:
            notes.append(f"Newer chats: recent_chats(sort_order='asc', after={quoted(iso_z(following))}).")
        text = _render(shown, notes)
        if len(text) <= budget:
            return text
        tail = chats[-1].updated_at
        keep = [hit for hit in chats if hit.updated_at != tail]
        if keep:
            chats = keep
            boundary = chats[-1].updated_at
        elif cap > MIN_CAP:
            cap //= 2
        else:
            return text
