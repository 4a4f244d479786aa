"""The text the model reads: one `<chat>` block per conversation, chat content kept inert.

Chat content is data, never markup. Whatever a title, a message or a source-supplied attribute holds,
it cannot close a block or open a forged one: a `<` that starts a (closing) `chat` tag is swapped for
a lookalike, attribute values are entity-escaped, and one-line fields stay on one line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from storage.results import ChatHit, ShownMessage

_TAG_START = re.compile(r"<(?=\s*/?\s*chat)", re.IGNORECASE)
LOOKALIKE_LT = "\u2039"  # ‹
MATCH_SEPARATOR = "…"


def iso(value: datetime) -> str:
    """UTC, second precision unless the value has sub-seconds (a page boundary must round-trip exactly)."""
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    spec = "seconds" if value.microsecond == 0 else "microseconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def neutralise(text: str) -> str:
    return _TAG_START.sub(LOOKALIKE_LT, text)


def one_line(text: str) -> str:
    return neutralise(" ".join(text.split()))


def attr(value: str) -> str:
    return html.escape(" ".join(value.split()), quote=True)


def quoted(value: str) -> str:
    """A Python-style string literal for call hints in notes (`read_chat(uri='…')`)."""
    return repr(one_line(value))


def span_label(spans: Sequence[tuple[int, int]], total: int) -> str:
    """`messages 12-17, 30 of 40` from 0-based (first, last) index pairs."""
    if not spans:
        return f"{total} message{'' if total == 1 else 's'}"
    parts = [f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in spans]
    word = "message" if len(spans) == 1 and spans[0][0] == spans[0][1] else "messages"
    return f"{word} {', '.join(parts)} of {total}"


def message_line(message: ShownMessage) -> str:
    return f"{message.role}: {neutralise(message.text)}"


def chat_block(hit: ChatHit, groups: Sequence[Sequence[ShownMessage]]) -> str:
    """One chat; `groups` are runs of consecutive messages, separated by a `…` line."""
    attrs = [f"uri='{attr(hit.uri)}'"]
    if hit.url:
        attrs.append(f"url='{attr(hit.url)}'")
    attrs.append(f"updated_at='{iso(hit.updated_at)}'")
    header = [f"Title: {one_line(hit.title) or '(untitled)'}"]
    if hit.project:
        header.append(f"project {one_line(hit.project)}")
    shown = [group for group in groups if group]
    header.append(span_label([(g[0].index, g[-1].index) for g in shown], hit.message_count))
    lines = [f"<chat {' '.join(attrs)}>", " · ".join(header)]
    for position, group in enumerate(shown):
        if position:
            lines.append(MATCH_SEPARATOR)
        lines.extend(message_line(m) for m in group)
    lines.append("</chat>")
    return "\n".join(lines)


def document(blocks: Sequence[str], notes: Sequence[str] = ()) -> str:
    """Blocks separated by blank lines, then one `Note:` line per note."""
    return "\n\n".join([*blocks, *(f"Note: {neutralise(n)}" for n in notes)])
