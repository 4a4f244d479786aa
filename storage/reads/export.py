"""`pastchats export`: the store's conversations in the plain pastchats format (docs/formats.md), or as
markdown to read (`markdown`).

Importing an export into a fresh store gives back the same conversations: ids, titles, times,
projects, urls, sources and messages (ids, roles, texts, times, and the files and commands their tool
calls touched). JSON Lines writes one conversation
per line; JSON writes `{"conversations": [...]}`. Both are streamed: the store is never held in memory.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from storage.times import iso_z

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


# ---- markdown: for people to read, not to import back ------------------------------------------

# A line an importer wrote for a tool call (`importers._common.summarise_tool_call`).
_TOOL_CALL = re.compile(r"\[tool [^\]\n]*\]?")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def yaml_string(value: str) -> str:
    """`value` as one YAML double-quoted scalar, as PyYAML writes it (a title with a colon, a quote or a
    line break stays one value); a lone surrogate, which no YAML holds, becomes U+FFFD."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

    text = _LONE_SURROGATE.sub("\ufffd", value)
    return str(yaml.safe_dump(text, allow_unicode=True, default_style='"', width=float("inf"))).rstrip("\n")


def markdown_name(conversation_id: str, taken: set[str]) -> str:
    """A file name for a chat's markdown: its id with what a file system may refuse replaced, unique
    among `taken` (compared case-insensitively, as macOS and Windows compare names)."""
    stem = re.sub(r"[^\w.-]+", "_", conversation_id).strip("._")[:120] or "chat"
    name, n = f"{stem}.md", 1
    while name.casefold() in taken:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name.casefold())
    return name


def markdown(conversation: Conversation) -> str:
    """One chat as markdown: YAML front matter (title, source, project, dates, uri), then each message
    under a heading naming its role and time, its text as stored (redacted as stored). Tool output, and
    an assistant's message of only tool calls, are collapsed `<details>` blocks, the text fenced."""
    front = {
        "title": conversation.title,
        "source": conversation.source,
        "project": conversation.project,
        "created": iso_z(conversation.created_at),
        "updated": iso_z(conversation.updated_at),
        "uri": conversation.id,
        "url": conversation.url,
        "messages": len(conversation.messages),
    }
    lines = ["---"]
    for key, value in front.items():
        if isinstance(value, int):
            lines.append(f"{key}: {value}")
        elif value is not None:
            lines.append(f"{key}: {yaml_string(value)}")
    lines += ["---", "", f"# {_one_line(conversation.title) or conversation.id}", ""]
    for message in conversation.messages:
        when = f" · {iso_z(message.created_at)}" if message.created_at is not None else ""
        lines += [f"## {message.index + 1}. {message.role}{when}", ""]
        text = _LONE_SURROGATE.sub("\ufffd", message.text)
        if message.role == "tool" or (message.role == "assistant" and _only_tool_calls(text)):
            label = "tool output" if message.role == "tool" else "tool calls"
            lines += [f"<details><summary>{label}</summary>", "", *_fenced(text), "", "</details>", ""]
        else:
            lines += [text, ""]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _only_tool_calls(text: str) -> bool:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_TOOL_CALL.fullmatch(line) for line in lines)


def _fenced(text: str) -> list[str]:
    """`text` in a code block whose fence is longer than any run of backticks in it: shown as it is."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", text, fence]
