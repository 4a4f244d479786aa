"""Coarser retrieval units beside the messages: exchange windows and one document per chat.

A question that needs several messages ("what did we choose for the queue, and why?") is answered by
a stretch of a chat, or by a chat as a whole, better than by any one message. These units are searched
by both legs like messages, but never shown: their scores flow to the messages they cover
(`storage.search`), so the lines a result shows are still the chat's best messages.

Everything here is extractive (no model writes anything) and derived: rebuilt with the chunks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from storage.models import Conversation, Message

MESSAGE = "message"
WINDOW = "window"
CHAT = "chat"

# A window reads at most this many words of each message: a long answer's opening says what it is
# about, and the embedding model reads only ~200 words of the whole window anyway.
WINDOW_MESSAGE_WORDS = 80
# The chat document: its title, the opening of each of the user's messages, and the chat's key terms.
CHAT_QUESTION_WORDS = 40
CHAT_KEY_TERMS = 24
CHAT_EMBED_WORDS = 180  # all-MiniLM-L6-v2 reads 256 word pieces

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'_-]{3,}")
# Common words that say nothing about what a chat is about (the query analyser's stop words are for
# short queries; these are frequent in long replies).
_PLAIN_WORDS = frozenset(
    """that this with from have what your they there their them then than were been being would could
    should about which when where will just like also into more some such only other over very much
    make made does doing done here know think thing things really well good great sure yeah okay thanks
    thank even still want need going because these those after before first last while each most many
    something anything everything right back take took time times year years today lots kind help""".split()
)


@dataclass(frozen=True)
class Unit:
    """A coarse unit before it becomes a `Chunk`: the messages it covers and its two texts."""

    kind: str
    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    text: str  # what the keyword leg indexes
    embed_text: str  # what the vector leg embeds


def _speaker(message: Message) -> str:
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
    title: bool = False,
    readable: Callable[[Message], bool] = lambda message: bool(message.text.strip()),
) -> Iterator[Unit]:
    """Windows of `size` consecutive messages, one starting every `stride` messages (size 3, stride 2:
    every pair of neighbours shares a window, at about half a row per message). Each message is read up
    to `words` words; `title` puts the chat's title above the embedded lines. Only `readable` messages
    give the window a line (the chunker leaves out tool output and acknowledgements, as it does for
    message vectors); a window needs two lines."""
    messages = conversation.messages
    if size < 2 or len(messages) < 2:
        return
    start = 0
    while True:
        part = messages[start : start + size]
        lines = [f"{_speaker(m)}: {_head(m.text, words)}" for m in part if m.text.strip() and readable(m)]
        if len(lines) >= 2:
            text = "\n".join(lines)
            embedded = f"{conversation.title}\n{text}" if title and conversation.title.strip() else text
            yield Unit(WINDOW, part[0].index, part[-1].index, tuple(m.id for m in part), text, embedded)
        if start + size >= len(messages):
            break
        start += stride


def key_terms(conversation: Conversation, count: int = CHAT_KEY_TERMS) -> list[str]:
    """The chat's most repeated content words (said at least twice), in order of frequency."""
    counts: Counter[str] = Counter()
    for message in conversation.messages:
        counts.update(w.lower() for w in _WORD.findall(message.text) if w.lower() not in _PLAIN_WORDS)
    return [word for word, n in counts.most_common(count) if n >= 2]


def chat_document(conversation: Conversation) -> Unit | None:
    """Title, what the user asked or said (the opening of each user message) and the key terms."""
    messages = conversation.messages
    if not messages:
        return None
    asked = [_head(m.text, CHAT_QUESTION_WORDS) for m in messages if m.role == "user" and m.text.strip()]
    terms = key_terms(conversation)
    text = "\n".join([conversation.title, *asked, " ".join(terms)])
    embedded = " ".join(" ".join([conversation.title, " ".join(terms), *asked]).split()[:CHAT_EMBED_WORDS])
    ids = tuple(m.id for m in messages)
    return Unit(CHAT, 0, len(messages) - 1, ids, text, embedded)


def kind_of(chunk_id: str) -> str:
    """A chunk's kind from its id: messages end in a passage number, windows in `w<first>-<last>`,
    the chat document in `chat` (see `storage.chunking`)."""
    tail = chunk_id.rsplit("\x1f", 1)[-1]
    if tail.isdigit():
        return MESSAGE
    return CHAT if tail == CHAT else WINDOW


def message_chunk_id(conversation_id: str, index: int, part: int = 0) -> str:
    return f"{conversation_id}\x1f{index}\x1f{part}"
