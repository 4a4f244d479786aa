"""The text the model reads: one `<chat>` block per conversation, chat content kept inert.

Chat content is data, never markup, and it cannot pass for our own lines:
- every line we write ourselves starts in the first column (`<chat`, `Title:`, `Files:`, `Evidence:`, `</chat>`,
  `Note:`, the `…` between matches); every line of chat content starts with its message's `#number role:`
  prefix, or is a continuation indented under it. No message can start a line that looks like ours. A
  chat listed in one line (`chat_line`) holds only our own words and its one-line title and project;
- anything that reads as a `<chat` or `</chat` tag, look-alikes included (`tools.lookalikes`: Unicode's
  confusables data, invisible runs of any length), has its bracket swapped for `‹`, so no forged block
  can open or close;
- nothing can act on a terminal or hide how text reads: control characters, escape sequences and bidi
  controls are removed (`storage.safe_text`; chats imported since are clean already, older ones not);
- attribute values are entity-escaped and one-line fields stay on one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.safe_text import clean
from storage.times import iso_z, utc
from tools.lookalikes import tag_brackets

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from storage.reads.results import ChatHit, ShownMessage

# What a tag's bracket becomes: a bracket to a reader, but nothing Unicode's confusables data or NFKC
# folds to `<` (a test checks it against `tools.lookalikes`).
LOOKALIKE_LT = "\u00ab"  # «
MATCH_SEPARATOR = "…"
CONTINUATION = "  "

# html.escape(value, quote=True), without importing `html` (its entity table costs ~2 ms of start-up).
_ATTR_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def neutralise(text: str) -> str:
    """`text` made safe to show: unsafe characters removed, the bracket of anything that reads as a
    `<chat` or `</chat` tag swapped."""
    text = clean(text)
    if text.isascii() and "<" not in text:  # the only bracket-like character in ASCII (most texts)
        return text
    return _swap_brackets(text)


def _swap_brackets(text: str) -> str:
    starts = list(tag_brackets(text))
    if not starts:
        return text
    out = []
    last = 0
    for start in starts:
        out.append(text[last:start])
        out.append(LOOKALIKE_LT)
        last = start + 1
    out.append(text[last:])
    return "".join(out)


def one_line(text: str) -> str:
    return neutralise(" ".join(text.split()))


def attr(value: str) -> str:
    return clean(" ".join(value.split())).translate(_ATTR_ESCAPES)


def quoted(value: str) -> str:
    """A Python-style string literal for call hints in notes (`read_chat(uri='…')`)."""
    return repr(one_line(value))


def day(value: datetime) -> str:
    return utc(value).date().isoformat()


def span_label(spans: Sequence[tuple[int, int]], total: int) -> str:
    """`messages 12-17, 30 of 40` from 0-based (first, last) index pairs."""
    if not spans:
        return f"{total} message{'' if total == 1 else 's'}"
    parts = [f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in spans]
    word = "message" if len(spans) == 1 and spans[0][0] == spans[0][1] else "messages"
    return f"{word} {', '.join(parts)} of {total}"


def chat_span(hit: ChatHit) -> tuple[datetime, datetime]:
    """When the chat's messages were written: first and last message time, else created/updated."""
    return hit.first_message_at or hit.created_at, hit.last_message_at or hit.updated_at


def dates_label(hit: ChatHit) -> str:
    first, last = (day(t) for t in chat_span(hit))
    return first if first == last else f"{first} to {last}"


def message_lines(message: ShownMessage, dated: bool) -> list[str]:
    """`#12 user: text`, with the message's date when the chat spans several days, `matched` when it
    matched; every further line of the message indented under it."""
    notes = []
    if dated and message.created_at is not None:
        notes.append(day(message.created_at))
    if message.matched:
        notes.append("matched")
    prefix = f"#{message.number} {message.role}" + (f" ({', '.join(notes)})" if notes else "") + ":"
    lines = neutralise(message.text).splitlines() or [""]
    first, rest = lines[0], lines[1:]
    out = [f"{prefix} {first}" if first else prefix]
    blank = False
    for line in rest:
        if not line.strip():
            blank = True  # runs of blank lines shrink to one; a blank line is never content of its own
            continue
        if blank:
            out.append("")
            blank = False
        out.append(CONTINUATION + line)
    return out


# Each message's lines by the message's id, with the message (so an id reused by a new object never
# matches) and whether the lines were dated: the size budget renders a chat several times over, at
# levels that mostly keep the same message objects (`tools.search_budget`).
LineMemo = dict[int, tuple["ShownMessage", bool, list[str]]]


def _opening(hit: ChatHit) -> str:
    attrs = [f"uri='{attr(hit.uri)}'"]
    if hit.url:
        attrs.append(f"url='{attr(hit.url)}'")
    attrs.append(f"updated_at='{iso_z(hit.updated_at)}'")
    if hit.strength is not None:
        attrs.append(f"strength='{hit.strength}'")
    return f"<chat {' '.join(attrs)}>"


def _about(hit: ChatHit) -> list[str]:
    """Title, project and dates: what names a chat."""
    about = [one_line(hit.title) or "(untitled)"]
    if hit.shown_project:
        about.append(f"project {one_line(hit.shown_project)}")
    about.append(dates_label(hit))
    return about


# How many files or commands of each kind a header names before it counts the rest ("(+12)"), how
# much of each it shows, and how long the line may grow: a short line, whatever the chat touched.
TOUCHED_SHOWN = {"edited": 3, "read": 2, "ran": 2}
TOUCHED_CHARS = 60
TOUCHED_LINE_CHARS = 240


def touched_line(hit: ChatHit) -> str | None:
    """`Files: edited auth/session.py, api/routes.py (+12) · read config.py · ran pytest -q`: what the
    chat's tool calls touched, edits first, paths inside the chat's project named from it."""
    from storage.reads.results import touched_groups  # with the results: pydantic, loaded by then

    groups = touched_groups(hit.touched)
    totals = hit.touched_totals or {group: len(items) for group, items in groups.items()}
    parts: list[str] = []
    length = len("Files: ")
    for group, items in groups.items():
        shown: list[str] = []
        for item in items[: TOUCHED_SHOWN[group]]:
            named = _cut(item if group == "ran" else in_project(item, hit.project), group)
            if shown and length + len(named) > TOUCHED_LINE_CHARS:
                break
            shown.append(named)
            length += len(named) + 2
        if shown:
            more = totals.get(group, len(items)) - len(shown)
            parts.append(f"{group} {', '.join(shown)}" + (f" (+{more})" if more > 0 else ""))
            length += len(group) + 4
    return one_line("Files: " + " · ".join(parts)) if parts else None


def in_project(path: str, project: str | None) -> str:
    """`auth/session.py` for /home/ana/shop/auth/session.py in project /home/ana/shop; else the path."""
    if project:
        for separator in ("/", "\\"):
            folder = project.rstrip(separator) + separator
            if path.startswith(folder) and len(path) > len(folder):
                return path[len(folder) :]
    return path


def _cut(item: str, kind: str) -> str:
    """A path kept to its end (which names the file), a command to its start (which names what ran)."""
    if len(item) <= TOUCHED_CHARS:
        return item
    return item[: TOUCHED_CHARS - 1] + "…" if kind == "ran" else "…" + item[-(TOUCHED_CHARS - 1) :]


def evidence_line(hit: ChatHit) -> str | None:
    """`Evidence: strong, holds the query's words together · has nginx, proxy ('reverse proxy' together) ·
    lacks Traefik · meaning close` (search only): what the strength rests on, in the query's words."""
    evidence = hit.evidence
    if evidence is None:
        return None
    parts = [f"{hit.strength}, {evidence.why}" if hit.strength else evidence.why]
    if evidence.matched:
        together = f" ({', '.join(repr(p) for p in evidence.phrases)} together)" if evidence.phrases else ""
        parts.append(f"has {', '.join(evidence.matched)}{together}")
    if evidence.missing:
        parts.append(f"lacks {', '.join(evidence.missing)}")
    if evidence.meaning is not None:
        parts.append(f"meaning {evidence.meaning}")
    if evidence.newer:
        parts.append(f"newer on this: {evidence.newer}, shown before it; where they disagree, the newer holds")
    return one_line("Evidence: " + " · ".join(parts))


def chat_line(hit: ChatHit, read_best: str | None) -> str:
    """A chat in one line, for a weak match: what names it, the call that reads its best match
    (`read_best`, worded for the reader by the caller), and why it is weak."""
    about = _about(hit)
    if read_best is not None:
        about.append(f"best match: {read_best}")
    evidence = hit.evidence
    if evidence is not None:
        words = [f"has {', '.join(evidence.matched[:4])}"] if evidence.matched else []
        words += [f"lacks {', '.join(evidence.missing[:4])}"] if evidence.missing else []
        about.append(one_line(f"weak: {'; '.join([evidence.why, *words])}"))
    return f"{_opening(hit)}{' · '.join(about)}</chat>"


def chat_block(hit: ChatHit, groups: Sequence[Sequence[ShownMessage]], memo: LineMemo | None = None) -> str:
    """One chat; `groups` are runs of consecutive messages, separated by a `…` line. `memo` keeps each
    message's lines for the next rendering of the same message."""
    header = _about(hit)
    header[0] = f"Title: {header[0]}"
    shown = sorted((group for group in groups if group), key=lambda group: group[0].index)  # in message order
    header.append(span_label([(g[0].index, g[-1].index) for g in shown], hit.message_count))
    if hit.strength == "weak":
        header.append("weak match: may be unrelated")
    first, last = chat_span(hit)
    dated = day(first) != day(last)
    lines = [_opening(hit), " · ".join(header)]
    if (touched := touched_line(hit)) is not None:
        lines.append(touched)
    if (evidence := evidence_line(hit)) is not None:
        lines.append(evidence)
    for position, group in enumerate(shown):
        if position:
            lines.append(MATCH_SEPARATOR)
        for message in group:
            if memo is None:
                lines.extend(message_lines(message, dated))
                continue
            kept = memo.get(id(message))
            if kept is None or kept[0] is not message or kept[1] != dated:
                kept = memo[id(message)] = (message, dated, message_lines(message, dated))
            lines.extend(kept[2])
    lines.append("</chat>")
    return "\n".join(lines)


def document(blocks: Sequence[str], notes: Sequence[str] = (), lead: str | None = None) -> str:
    """An optional first line, blocks separated by blank lines, then one `Note:` line per note."""
    parts = ([lead] if lead else []) + list(blocks) + [f"Note: {one_line(n)}" for n in notes]
    return "\n\n".join(parts)
