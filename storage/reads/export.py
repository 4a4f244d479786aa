"""`pastchats export`: the store's conversations in the plain pastchats format (docs/formats.md).

Importing an export into a fresh store gives back the same conversations: ids, titles, times,
projects, urls, sources and messages (ids, roles, texts, times, and the files and commands their tool
calls touched). JSON Lines writes one conversation
per line; JSON writes `{"conversations": [...]}`. Both are streamed: the store is never held in memory.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, Literal, Protocol, TextIO

    from storage.models import Conversation

    ExportFormat = Literal["jsonl", "json"]

    class Conversations(Protocol):
        """A `Library`, or the catalog (`storage.stores.catalog`) when it reflects the store: `export` then runs
        without opening LanceDB."""

        def iter_conversations(
            self, *, project: str | None = None, source: str | None = None
        ) -> Iterator[Conversation]: ...


def plain_record(conversation: Conversation) -> dict[str, Any]:
    """A conversation as the plain format writes it (times in ISO 8601, UTC, `Z`)."""
    data = conversation.model_dump(mode="json")
    return {
        "id": data["id"],
        "title": data["title"],
        "created_at": data["created_at"],
        "updated_at": data["updated_at"],
        "project": data["project"],
        "url": data["url"],
        "source": data["source"],
        "messages": [_plain_message(m) for m in data["messages"]],
    }


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    record = {k: message[k] for k in ("id", "role", "text", "created_at")}
    if message["touches"]:  # only where a tool call touched something: most messages stay as they were
        record["touches"] = message["touches"]
    return record


def export(
    library: Conversations,
    out: TextIO,
    *,
    project: str | None = None,
    source: str | None = None,
    format: ExportFormat = "jsonl",
) -> int:
    """Write the conversations (optionally only one project's / one source's) to `out`; returns how many."""
    records = (plain_record(c) for c in library.iter_conversations(project=project, source=source))
    return write_records(out, records, format)


def write_records(out: TextIO, records: Iterable[dict[str, Any]], format: ExportFormat) -> int:
    """Stream plain records to `out` as JSON Lines or one JSON document; returns how many."""
    count = 0
    if format == "json":
        out.write('{"conversations": [')
    for record in records:
        # ASCII escapes keep any lone surrogate a source held representable, so the round trip is exact.
        line = json.dumps(record)
        if format == "json":
            out.write(("\n" if count == 0 else ",\n") + line)
        else:
            out.write(line + "\n")
        count += 1
    if format == "json":
        out.write("\n]}\n")
    return count
