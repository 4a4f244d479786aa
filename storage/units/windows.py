"""Coarser retrieval units beside the messages: exchange windows.

A question that needs several messages ("what did we choose for the queue, and why?") is answered by
a stretch of a chat better than by any one message. These units are ranked by both legs like messages
(the keyword leg scores them from its message hits), but never shown: their scores flow to the messages
they cover (`storage.search`), so the lines a result shows are still the chat's best messages.

Everything here is extractive (no model writes anything) and derived: rebuilt with the chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from storage.models import Conversation, Message

MESSAGE = "message"
WINDOW = "window"

# A window reads at most this many words of each message: a long answer's opening says what it is
# about, and the embedding model reads only ~200 words of the whole window anyway.
WINDOW_MESSAGE_WORDS = 80


@dataclass(frozen=True)
class Unit:
    """A window before it becomes a `Chunk`: the messages it covers and its text (indexed, and embedded
    where windows' vectors come from the model)."""

    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    text: str


def speaker_label(message: Message) -> str:
    return {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[message.role]


def _head(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def windows(
    conversation: Conversation,
    size: int,
    stride: int,
    *,
    words: int = WINDOW_MESSAGE_WORDS,
    readable: Callable[[Message], bool] = lambda message: bool(message.text.strip()),
) -> Iterator[Unit]:
    """Windows of `size` consecutive messages, one starting every `stride` messages (size 3, stride 2:
    every pair of neighbours shares a window, at about half a row per message). Each message is read up
    to `words` words. Only `readable` messages
    give the window a line (the chunker leaves out tool output and acknowledgements, as it does for
    message vectors); a window needs two lines."""
    messages = conversation.messages
    if size < 2 or len(messages) < 2:
        return
    start = 0
    while True:
        part = messages[start : start + size]
        lines = [f"{speaker_label(m)}: {_head(m.text, words)}" for m in part if m.text.strip() and readable(m)]
        if len(lines) >= 2:
            yield Unit(part[0].index, part[-1].index, tuple(m.id for m in part), "\n".join(lines))
        if start + size >= len(messages):
            break
        start += stride


def kind_of(chunk_id: str) -> str:
    """A chunk's kind from its id: messages end in a passage number, windows in `w<first>-<last>`
    (see `storage.units.passages`)."""
    return MESSAGE if chunk_id.rsplit("\x1f", 1)[-1].isdigit() else WINDOW


def message_chunk_id(conversation_id: str, index: int, part: int = 0) -> str:
    return f"{conversation_id}\x1f{index}\x1f{part}"
