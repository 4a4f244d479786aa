"""`pastchats read` and `pastchats export` from a current catalog without pydantic (start-up speed).

The read_chat tool pages through `storage.reading`, fits the page with `tools.budget.fit_page` and
renders it with `tools.render`; `pastchats export` writes `storage.export.plain_record` of each
`Conversation`. Importing pydantic and building those models was most of what both commands cost. This
module takes the same steps on plain objects (the paging rules are `storage.reading`'s own functions,
the text `tools.render`'s), and writes the same JSON: the tool's `model_dump_json(indent=2)` for
`read --json`, `json.dumps` of the plain record for `export`. Tests run both on the same stores and
arguments, byte for byte. Whenever the tool would raise (an unknown chat or message, an empty uri) it
answers None and the caller runs the tool itself, which words the error.
"""

from __future__ import annotations

import json
import sqlite3
import zlib

from server.cli_recent import CUT, MIN_CAP, Hit, Shown, _clip, _time
from storage.catalog_read import CHAT_COLUMNS
from storage.errors import PastchatsError
from storage.reading import candidates, message_index, page_start
from storage.times import iso_z
from tools.render import chat_block, document, quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime
    from typing import Any, TextIO

    from server.cli_quick import ExportValues
    from storage.export import ExportFormat


BATCH = 200  # chats per query, as `storage.catalog` reads them for an export


def _held(blob: bytes) -> list[list[Any]]:
    """A chat's messages as the catalog holds them (`storage.catalog._packed`): id, index, role, text, time."""
    return list(json.loads(zlib.decompress(blob).decode("utf-8")))


def _page(
    connection: sqlite3.Connection, uri: str, offset: int, limit: int, around: str | None
) -> tuple[Hit, int, int] | None:
    """`storage.reading.read_chat` on the catalog: the chat with its page of messages, the page's
    offset and its next offset (-1 at the end); None where it raises."""
    uri = uri.strip()
    around = around.strip() or None if around is not None else None  # tools.arguments.blank_to_none
    if not uri:
        return None
    connection.row_factory = sqlite3.Row
    row = None
    for candidate in candidates(uri):
        row = connection.execute(f"SELECT {CHAT_COLUMNS}, messages FROM chats WHERE id = ?", (candidate,)).fetchone()
        if row is not None:
            break
    if row is None:
        return None
    held = _held(row["messages"])
    count = int(row["message_count"])
    position = None
    if around is not None:
        ids = {str(m[0]): int(m[1]) for m in reversed(held)}  # the first message with an id, as the catalog finds it
        try:
            position = message_index(row["id"], count, around, ids.get)
        except PastchatsError:
            return None
    offset = page_start(offset, limit, position, count)
    last = offset + limit - 1
    messages = []
    for mid, index, role, text, created in held:
        if offset <= index <= last:
            shown = Shown(mid, index, role, text, None if created is None else _time(created))
            shown.matched = index == position
            messages.append(shown)
    end = offset + len(messages)
    return Hit(row, [messages]), offset, end if end < count else -1


def _fit(hit: Hit, offset: int, following: int, budget: int, limit: int) -> tuple[dict[str, Any], str]:
    """`tools.budget.fit_page`: fewer messages, then shorter ones, until the text fits; the output as
    the tool's model would dump it, and the text."""
    messages = list(hit.groups[0])
    cap = max(MIN_CAP, budget - 600)
    cut_ends = False
    uri = quoted(hit.uri)
    while True:
        shown = []
        for message in messages:
            text, cut = _clip(message.text, cap)
            if cut:
                clipped = Shown(message.id, message.index, message.role, text, message.created_at)
                clipped.matched, clipped.truncated = message.matched, True
                message = clipped
            shown.append(message)
        notes: list[str] = []
        if any(m.truncated for m in shown):
            notes.append(f"Messages marked {CUT} were too long for the size budget and were shortened.")
        if cut_ends:
            notes.append("Fewer messages than asked were shown, to fit the size budget.")
        if offset > 0:
            notes.append(f"Earlier messages: read_chat(uri={uri}, offset={max(0, offset - limit)}).")
        if following >= 0:
            notes.append(f"Later messages: read_chat(uri={uri}, offset={following}).")
        text = document([chat_block(hit, [shown])], notes)  # type: ignore[arg-type,list-item]  # ChatHit's fields
        if len(text) <= budget or (len(messages) <= 1 and cap <= MIN_CAP):
            output = {
                "chat": _chat(hit),
                "messages": [_message(m) for m in shown],
                "offset": offset,
                "next_offset": following if following >= 0 else None,
                "truncated": cut_ends or any(m.truncated for m in shown),
                "notes": notes,
            }
            return output, text
        if len(messages) > 1:
            cut_ends = True
            target = next((i for i, m in enumerate(messages) if m.matched), None)
            if target is not None and target >= len(messages) - 1 - target:
                messages.pop(0)
                offset = messages[0].index
            else:
                following = messages.pop().index
        else:
            cap //= 2


def _when(value: datetime | None) -> str | None:
    """A time as pydantic writes it in JSON (UTC: `Z`, microseconds only when there are some)."""
    return None if value is None else iso_z(value)


def _chat(hit: Hit) -> dict[str, Any]:
    """`ChatHit`'s fields, in its order."""
    return {
        "uri": hit.uri,
        "title": hit.title,
        "url": hit.url,
        "source": hit.source,
        "project": hit.project,
        "created_at": _when(hit.created_at),
        "updated_at": _when(hit.updated_at),
        "first_message_at": _when(hit.first_message_at),
        "last_message_at": _when(hit.last_message_at),
        "message_count": hit.message_count,
        "strength": None,
        "matches": [],
    }


def _message(message: Shown) -> dict[str, Any]:
    """`ShownMessage`'s fields, in its order."""
    return {
        "id": message.id,
        "index": message.index,
        "number": message.number,
        "role": message.role,
        "text": message.text,
        "created_at": _when(message.created_at),
        "matched": message.matched,
        "truncated": message.truncated,
    }


def read_text(
    connection: sqlite3.Connection, uri: str, *, offset: int, limit: int, around: str | None, budget: int, as_json: bool
) -> str | None:
    """The read_chat tool's answer (its text, or its output as `model_dump_json(indent=2)` writes it),
    or None where the tool itself must answer (it raises there)."""
    found = _page(connection, uri, offset, limit, around)
    if found is None:
        return None
    output, text = _fit(*found, budget, limit)
    answer = json.dumps(output, indent=2, ensure_ascii=False) if as_json else text
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate a source held: the tool's own path decides what to do
        return None
    return answer


def records(connection: sqlite3.Connection, project: str | None, source: str | None) -> Iterator[dict[str, Any]]:
    """`storage.export.plain_record` of each chat `Catalog.iter_conversations` gives, in the same order."""
    clauses, args = [], []
    if project is not None:
        clauses.append("project IN (?)")
        args.append(project)
    if source is not None:
        clauses.append("source = ?")
        args.append(source)
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    found = sorted(str(row[0]) for row in connection.execute(f"SELECT id FROM chats{where}", args))
    for start in range(0, len(found), BATCH):
        batch = found[start : start + BATCH]
        marks = ", ".join("?" * len(batch))
        query = f"SELECT id, title, created, updated, project, url, source, messages FROM chats WHERE id IN ({marks})"
        rows = {row[0]: row for row in connection.execute(query, batch)}
        for cid in batch:
            _, title, created, updated, project_, url, source_, blob = rows[cid]
            yield {
                "id": cid,
                "title": title,
                "created_at": iso_z(_time(created)),
                "updated_at": iso_z(_time(updated)),
                "project": project_,
                "url": url,
                "source": source_,
                "messages": [
                    {"id": mid, "role": role, "text": text, "created_at": None if at is None else iso_z(_time(at))}
                    for mid, _, role, text, at in _held(blob)
                ],
            }


def export(
    connection: sqlite3.Connection, out: TextIO, *, project: str | None, source: str | None, format: ExportFormat
) -> int:
    """`storage.export.export` from the catalog's rows: the same bytes, streamed the same way."""
    from storage.export import write_records

    return write_records(out, records(connection, project, source), format)


def export_to(connection: sqlite3.Connection, values: ExportValues) -> int | None:
    """`pastchats export` as the click group runs it (`server.cli_data.export`); None, before writing
    anything, where the click group must answer (a file it cannot open, in its words)."""
    from server.cli_quick import export_out

    return export_out(
        values, lambda out: export(connection, out, project=values.project, source=values.source, format=values.format)
    )
