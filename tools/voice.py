"""Who reads a result: the model, through an MCP tool, or a person, through `pastchats search|recent|read`.

Both get the same results and errors, made once; only the words that name a next step differ. A model
is offered a tool call (`read_chat(uri='x', around=3)`); a person the command that does the same
(`pastchats read x --around 3`), and never to "ask the user". The CLI says a person reads
(`for_a_person()`) around a tool body; everything else (the MCP server) is read by the model.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from storage.times import iso_z
from tools.render import one_line

_person: ContextVar[bool] = ContextVar("pastchats_read_by_a_person", default=False)

# Each tool's command, the argument the command takes as its first word, and the flags that differ
# from `--name-with-dashes`.
COMMANDS: dict[str, tuple[str, str | None]] = {
    "conversation_search": ("search", "query"),
    "recent_chats": ("recent", None),
    "read_chat": ("read", "uri"),
}
FLAGS = {"n": "-n"}


@contextmanager
def for_a_person() -> Iterator[None]:
    """Within this, results and errors name commands for a person at a terminal."""
    token = _person.set(True)
    try:
        yield
    finally:
        _person.reset(token)


def by_a_person() -> bool:
    return _person.get()


def said(*, model: str, person: str) -> str:
    """The one sentence that differs between the two readers (what to do when nothing matched)."""
    return person if by_a_person() else model


def tool(name: str) -> str:
    """How to name a tool in a sentence: `recent_chats`, or `pastchats recent` for a person."""
    return f"`pastchats {COMMANDS[name][0]}`" if by_a_person() else name


def call(name: str, **arguments: object) -> str:
    """A complete next step with the arguments given, in order, None left out:
    `recent_chats(n=2, project='homelab', before='2025-01-18T21:40:00Z')` for the model,
    `pastchats recent -n 2 --project homelab --before 2025-01-18T21:40:00Z` for a person."""
    given = {key: iso_z(value) if isinstance(value, datetime) else value for key, value in arguments.items()}
    given = {key: value for key, value in given.items() if value is not None}
    if not by_a_person():
        shown = [f"{key}={_literal(value) if isinstance(value, str) else value}" for key, value in given.items()]
        return f"{name}({', '.join(shown)})"
    command, first = COMMANDS[name]
    words = ["pastchats", command]
    if first is not None and first in given:
        words.append(_word(given.pop(first)))
    for key, value in given.items():
        words += [FLAGS.get(key, "--" + key.replace("_", "-")), _word(value)]
    return " ".join(words)


def _literal(value: str) -> str:
    """A Python-style string literal, on one line and unable to pass for our own markup."""
    return repr(one_line(value))


def _word(value: object) -> str:
    """One shell word, quoted when it must be, on one line and unable to pass for our own markup."""
    return shlex.quote(one_line(str(value)))
