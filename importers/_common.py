"""Helpers every importer shares: lenient values, times, tool summaries, the opt-out check, assembling models.

Sources are written by other programs and change shape between versions, so everything here takes
`object` and answers with a safe default instead of raising.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from importers.base import ImportReport
from storage.errors import PastchatsError
from storage.models import Conversation, Message, Role, Touch
from storage.redaction import redact_part
from storage.times import RANGE, iso_z, parse_iso, storable

OPT_OUT_MARKER = "pastchats: do-not-index"
_OPT_OUT_LINE = re.compile(r"^[ \t>#*-]*pastchats:[ \t]*do-not-index[ \t.]*$", re.MULTILINE | re.IGNORECASE)

# Errors that a malformed record can raise while being converted; caught per conversation so one
# bad record never ends an import. Anything else is a bug and propagates.
RECORD_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)


class Unusable(PastchatsError):
    """This conversation cannot be imported; the message is the reason given in the report."""


# --- lenient values ---------------------------------------------------------------------------


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_id(value: object) -> str:
    """A source id as text: strings as they are, integers converted, anything else empty."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


# --- times ------------------------------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime from epoch seconds or milliseconds (number or numeric string) or ISO 8601.

    Naive ISO values are taken to be UTC. Anything unparseable is None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds) or seconds <= 0:
            return None
        while seconds > 1e11:  # milliseconds or microseconds since the epoch
            seconds /= 1000
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return parse_time(float(text))
        except ValueError:
            pass
        return parse_iso(text)
    return None


def expand_home(value: str, home: Path) -> Path:
    """A configured path with a leading `~` resolved against `home` (not the process environment)."""
    value = value.strip()
    if value == "~" or value.startswith(("~/", "~\\")):
        return home / value[2:]
    return Path(value)


# The system's own folder variables, which several agents keep their files under; described once.
_SYSTEM_FOLDERS = {
    "XDG_CONFIG_HOME": "the user's XDG config folder (default ~/.config)",
    "XDG_DATA_HOME": "the user's XDG data folder (default ~/.local/share)",
    "APPDATA": "the user's roaming application data folder on Windows",
    "LOCALAPPDATA": "the user's local application data folder on Windows",
}


def system_folders(*names: str) -> dict[str, str]:
    """The system folder variables `names` (`XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `APPDATA`,
    `LOCALAPPDATA`) with their descriptions, for an importer's `variables`."""
    return {name: _SYSTEM_FOLDERS[name] for name in names}


def env_folder(env: Mapping[str, str], variable: str, home: Path, *default: str) -> Path:
    """The folder an environment variable names (the agents' `XDG_DATA_HOME`, `%APPDATA%`...), else
    `home` joined with `default`, where the agent itself falls back to."""
    configured = env.get(variable, "").strip()
    return expand_home(configured, home) if configured else home.joinpath(*default)


# --- text -------------------------------------------------------------------------------------


def shorten(text: str, limit: int = 200) -> str:
    """One line, whitespace collapsed, cut to at most `limit` characters with an ellipsis: the secrets of
    the whole text redacted first (`redact_part`), so that no cut or joined line hides one from the rules;
    then cut after the last whole word that fits, never inside one nor inside a placeholder. A first
    word longer than `limit` (a URL, a path) is cut after the last `/`, `-`, `.` or `_` that fits, and
    only without any, at the limit."""
    line = " ".join(redact_part(text)[: limit * 4].split())
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    opened = head.rfind("[redacted: ")
    if opened >= 0 and head.find("]", opened) < 0:  # never half a placeholder
        return head[:opened].rstrip() + "…"
    if line[limit - 1] == " ":  # the cut falls between two words
        return head.rstrip() + "…"
    space = head.rfind(" ")
    if space > 0:
        return head[:space].rstrip(" ,;:-") + "…"
    joint = max(head.rfind(mark) for mark in "/-._")
    return (head[: joint + 1] if joint > 0 else head) + "…"


# What an agent adds to the user's message for the model, in tags of its own: the file open in the
# editor and the lines selected in it (Claude Code's IDE extensions), its reminders and hook output.
# The user did not type it; it is not what they said.
_INJECTED = re.compile(
    r"<(ide_opened_file|ide_selection|ide_diagnostics|system-reminder|user-prompt-submit-hook)>.*?</\1>\s*",
    re.DOTALL,
)
# Reasoning a model writes inline before its answer (DeepSeek-R1, QwQ and the like, through any
# provider that passes it on): it leads the reply, and when the reply was cut off while the model
# was thinking, it is all there is.
_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


def without_injected(text: str) -> str:
    """The user's own words: `text` without the context an agent injected into it."""
    return _INJECTED.sub("", text).strip() if "<" in text else text


def without_reasoning(text: str) -> str:
    """A reply's answer: `text` without the `<think>…</think>` reasoning that leads it."""
    if not text.lstrip().startswith("<think>"):
        return text
    answer = _THINKING.sub("", text, count=1)
    return "" if answer.lstrip().startswith("<think>") else answer


_TOOL_ARG_KEYS = (
    "command",
    "cmd",
    "pattern",
    "query",
    "file_path",
    "filePath",
    "target_file",
    "path",
    "url",
    "prompt",
    "description",
)


def summarise_tool_call(name: str, arguments: object) -> str:
    """`[tool Bash: git status]`: the tool and its most telling argument, never the whole input."""
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    detail = ""
    if isinstance(arguments, dict):
        for key in _TOOL_ARG_KEYS:
            value = arguments.get(key)
            if isinstance(value, list):
                value = " ".join(str(part) for part in value)
            if isinstance(value, str) and value.strip():
                detail = value
                break
        else:
            detail = json.dumps(arguments, ensure_ascii=False, default=str) if arguments else ""
    elif isinstance(arguments, str):
        detail = arguments
    name = shorten(name or "unknown", 60)
    return f"[tool {name}: {shorten(detail, 120)}]" if detail.strip() else f"[tool {name}]"


def summarise_tool_result(text: str, limit: int = 300, *, error: bool = False) -> str:
    label = "tool error" if error else "tool result"
    return f"[{label}: {shorten(text, limit)}]" if text.strip() else f"[{label}: (empty)]"


def result_text(content: object) -> str:
    """A tool result's text: a string, or the `text` of each of its content blocks."""
    if isinstance(content, str):
        return content
    return " ".join(as_str(as_dict(item).get("text")) for item in as_list(content))


def has_opt_out(conversation: Conversation) -> bool:
    """Whether any message holds a line `pastchats: do-not-index` (the privacy opt-out marker)."""
    for message in conversation.messages:
        if "do-not-index" in message.text.lower() and _OPT_OUT_LINE.search(message.text):
            return True
    return False


# --- assembling models ------------------------------------------------------------------------


@dataclass
class Turn:
    """A message before it gets its index: `key` is the source's own id for it, if any."""

    key: str
    role: Role
    text: str
    created_at: datetime | None = None
    touches: tuple[Touch, ...] = ()  # what its tool calls touched (`importers._touches`), paths as written


def check_chat_times(created_at: datetime | None, updated_at: datetime | None) -> None:
    """Raise Unusable when a chat's own time cannot be stored: `updated_at` in year 9999 or 1500 is a
    broken record, and guessing another time would put the chat somewhere it never was."""
    for name, value in (("created_at", created_at), ("updated_at", updated_at)):
        if value is not None and not storable(value):
            raise Unusable(f"{name} out of range ({iso_z(value)}; times must fall in {RANGE})")


def message_time(value: datetime | None, report: ImportReport) -> datetime | None:
    """A message's time, or None (the message takes its chat's time) when it cannot be stored."""
    if value is None or storable(value):
        return value
    report.note(f"some message times were out of range ({RANGE}) and were left out")
    return None


def build_conversation(
    *,
    id: str,
    source: str,
    turns: list[Turn],
    report: ImportReport,
    title: str = "",
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    project: str | None = None,
    url: str | None = None,
    fallback_time: datetime | None = None,
) -> Conversation:
    """A valid Conversation from loose parts: keeps each speaker's own words (`_own_words`), drops
    empty turns, makes message ids unique, fills times. A title that is a model's leaked reasoning
    (`<think> Okay, so I…`) is no title: the first user message gives one.

    Raises Unusable("no messages") when no user or assistant text is left.
    """
    check_chat_times(created_at, updated_at)
    kept = [turn for turn in map(_own_words, turns) if turn.text.strip()]
    if not any(turn.role in {"user", "assistant"} for turn in kept):
        raise Unusable("no messages")  # tool output or a system prompt alone is not a conversation
    messages: list[Message] = []
    seen: set[str] = set()
    for index, turn in enumerate(kept):
        key = turn.key or f"{id}#{index}"
        unique, n = key, 1
        while unique in seen:
            n += 1
            unique = f"{key}~{n}"
        seen.add(unique)
        moment = message_time(turn.created_at, report)
        touched = tuple(dict.fromkeys(turn.touches))
        messages.append(
            Message(id=unique, index=index, role=turn.role, text=turn.text, created_at=moment, touches=touched)
        )
    times = [m.created_at for m in messages if m.created_at is not None]
    created = created_at or (min(times) if times else None) or updated_at
    updated = updated_at or (max(times) if times else None) or created
    if created is None or updated is None:
        report.note("some conversations had no times; the source file's modification time was used")
        created = created or message_time(fallback_time, report) or datetime.now(UTC)
        updated = updated or created
    if times and max(times) > updated:
        updated = max(times)
    updated = max(updated, created)
    title = " ".join(without_reasoning(title).split())
    return Conversation(
        id=id,
        source=source,
        title=shorten(title, 200) if title else title_from(messages),
        created_at=created,
        updated_at=updated,
        project=project or None,
        url=url or None,
        messages=messages,
    )


def _own_words(turn: Turn) -> Turn:
    """The turn as its speaker said it: a user's words without the context an agent injected into
    them, a reply without the reasoning that leads it. Every format's turns pass here."""
    if turn.role == "user":
        text = without_injected(turn.text)
    elif turn.role == "assistant":
        text = without_reasoning(turn.text)
    else:
        return turn
    return turn if text == turn.text else dataclasses.replace(turn, text=text)


def title_from(messages: list[Message]) -> str:
    """A title for an untitled chat: the start of its first user message, cut after a whole word (the
    whole message is the chat's first; only its head is looked at: messages can be huge)."""
    for message in messages:
        if message.role == "user" and message.text.strip():
            return shorten(message.text, 80)
    return "Untitled conversation"


# (what was met, which of its attributes was unknown, the value): how many times.
UnknownCounts = dict[tuple[str, str, str], int]


def count_unknown(counts: UnknownCounts, kind: str, what: str = "records", attribute: str = "type") -> None:
    """Count one record (block, message) whose `attribute` has a value this importer does not know."""
    key = (what, attribute, kind or "(none)")
    counts[key] = counts.get(key, 0) + 1


def note_unknown(report: ImportReport, counts: Mapping[tuple[str, str, str], int]) -> None:
    """One report note per unknown kind: "ignored 12 records of unknown type 'x'". Never silent."""
    for (what, attribute, kind), n in sorted(counts.items()):
        noun = what.removesuffix("s") if n == 1 and what.endswith("s") else what
        report.note(f"ignored {n} {noun} of unknown {attribute} '{kind}'")


def convert_each(
    root: Path,
    files: Iterable[Path],
    report: ImportReport,
    convert: Callable[[Path], Conversation],
    what: str,
) -> Iterator[Conversation]:
    """One conversation per file; a file that cannot be read or converted is reported and skipped."""
    for file in files:
        where = str(file.relative_to(root)) if file != root else file.name
        try:
            yield convert(file)
        except Unusable as exc:
            report.skip(where, str(exc))
        except OSError as exc:
            report.skip(where, f"cannot read: {exc.strerror or exc}")
        except RECORD_ERRORS as exc:
            report.skip(where, f"malformed {what}: {exc}")
