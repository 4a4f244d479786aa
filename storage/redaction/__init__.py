"""Secrets out before anything is stored: each chat's text with every secret replaced by a typed placeholder.

`[redacted: github-pat #1]`: the kind says what stood there, so the passage still reads; the number is
the secret's within its chat, so the model can tell two keys apart and see the same one come back. The
placeholders are the store's only record of a redaction: `stats` counts them (`redaction_counts`).

Applied by the ingestor to every conversation it writes (import, sync, reindex, and the pass that
redacts a store written before, or with older rules: `Redaction.stamp`). The archive of agent logs keeps
the files as their tools wrote them; nothing read from it reaches the store unredacted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from storage.models import Conversation
from storage.redaction.rules import Finding, RuleSet, files_stamp

__all__ = ["PLACEHOLDER", "REMEMBERED", "Redaction", "Remembered", "redaction_counts"]

# A record's fields that are never chat text: ids, names of sources and roles, times, the reason it was set aside.
RECORD_FIELDS = frozenset(
    {"id", "source", "role", "created_at", "updated_at", "project", "url", "index", "quarantined"}
)
REMEMBERED = 64  # chats `Remembered` keeps: more than a live sync brings at once
PLACEHOLDER = re.compile(r"\[redacted: ([a-z0-9][a-z0-9-]*) #(\d+)\]")


def redaction_counts(texts: Iterable[str]) -> Counter[str]:
    """Secrets redacted in one chat's texts, by kind: its distinct placeholders."""
    seen = {match.groups() for text in texts for match in PLACEHOLDER.finditer(text)}
    return Counter(kind for kind, _ in seen)


@dataclass(frozen=True)
class Redaction:
    """Whether and how chats are redacted. `allow`: kinds (as `stats` names them) never redacted, and
    regular expressions matched against each secret found: one that matches it in full keeps it."""

    enabled: bool = True
    allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for entry in self.allow:
            try:
                re.compile(entry)
            except re.error as exc:
                raise ValueError(f"redaction allow entry {entry!r} is not a regular expression: {exc}") from None

    @cached_property
    def rules(self) -> RuleSet:
        return RuleSet.load()

    @cached_property
    def _kept(self) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
        kinds = frozenset(entry for entry in self.allow if entry in self.rules.kinds)
        return kinds, tuple(re.compile(entry) for entry in self.allow if entry not in kinds)

    @property
    def stamp(self) -> str:
        """What the stored chats were last redacted with ('off' when not): a store whose record differs is
        scanned again, once, so new rules (or a shorter allow list) reach chats imported before them."""
        if not self.enabled:
            return "off"
        if not self.allow:
            return files_stamp()
        allow = hashlib.sha256("\n".join(sorted(self.allow)).encode("utf-8")).hexdigest()[:8]
        return f"{files_stamp()}:{allow}"

    def find(self, text: str) -> list[Finding]:
        """The secrets `text` holds that are not allowed."""
        if not self.enabled:
            return []
        kinds, patterns = self._kept
        return [
            f for f in self.rules.find(text) if f.kind not in kinds and not any(p.fullmatch(f.secret) for p in patterns)
        ]

    def redact(self, conversation: Conversation) -> tuple[Conversation, Counter[str]]:
        """The conversation with its secrets replaced (itself when none), and how many of each kind."""
        if not self.enabled:
            return conversation, Counter()
        chat = _Chat(self)
        title = chat.redact(conversation.title)
        messages = []
        for message in conversation.messages:
            text = chat.redact(message.text)
            messages.append(message if text is message.text else dataclasses.replace(message, text=text))
        if not chat.numbers:
            return conversation, Counter()
        redacted = conversation.model_copy(update={"title": title, "messages": messages})
        return redacted, Counter(kind for kind, _ in chat.numbers)

    def redact_after(self, conversation: Conversation, seen: _Seen | None) -> tuple[Conversation, Counter[str], _Seen]:
        """`redact`, scanning only what `seen` (this chat as last redacted) does not already hold: its
        messages that come back unchanged, at the same place, keep their redacted text, and the new ones
        are numbered on from the same secrets (a secret seen before keeps its number). Returns what to
        remember for the next time."""
        if not self.enabled:
            return conversation, Counter(), _Seen("", "", (), (), _Chat(self))
        same = seen is not None and seen.title == conversation.title
        chat = seen.chat.copy() if same and seen is not None else _Chat(self)
        title = seen.redacted_title if same and seen is not None else chat.redact(conversation.title)
        messages = []
        hashes = []
        redacted_texts = []
        for position, message in enumerate(conversation.messages):
            digest = _digest(message.id, message.text)
            if same and seen is not None and position < len(seen.hashes) and seen.hashes[position] == digest:
                text = seen.texts[position]
            else:
                same = False  # from the first change on, every message is scanned
                text = chat.redact(message.text)
            hashes.append(digest)
            redacted_texts.append(text)
            messages.append(message if text == message.text else dataclasses.replace(message, text=text))
        remembered = _Seen(conversation.title, title, tuple(hashes), tuple(redacted_texts), chat)
        if not chat.numbers:
            return conversation, Counter(), remembered
        redacted = conversation.model_copy(update={"title": title, "messages": messages})
        return redacted, Counter(kind for kind, _ in chat.numbers), remembered

    def redact_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """A plain-format record (as `storage.writing.quarantine` keeps one) with its texts redacted as its chat's."""
        chat = _Chat(self)

        def walk(value: Any, key: str = "") -> Any:
            if isinstance(value, str):
                return value if key in RECORD_FIELDS else chat.redact(value)
            if isinstance(value, list):
                return [walk(item) for item in value]
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items()}
            return value

        return walk(record) if self.enabled else record


class _Chat:
    """One chat's placeholders: the same secret always gets the same number."""

    def __init__(self, redaction: Redaction):
        self.redaction = redaction
        self.numbers: dict[tuple[str, str], int] = {}  # (kind, secret) -> its number in this chat
        self._by_secret: dict[str, str] = {}  # secret -> its placeholder

    def copy(self) -> _Chat:
        chat = _Chat(self.redaction)
        chat.numbers, chat._by_secret = dict(self.numbers), dict(self._by_secret)
        return chat

    def redact(self, text: str) -> str:
        findings = self.redaction.find(text)
        if not findings:
            return text
        parts: list[str] = []
        at = 0
        for finding in findings:
            parts.append(text[at : finding.start])
            parts.append(self._placeholder(finding))
            at = finding.end
        parts.append(text[at:])
        return "".join(parts)

    def _placeholder(self, finding: Finding) -> str:
        known = self._by_secret.get(finding.secret)
        if known is not None:
            return known
        number = 1 + sum(1 for kind, _ in self.numbers if kind == finding.kind)
        self.numbers[(finding.kind, finding.secret)] = number
        placeholder = f"[redacted: {finding.kind} #{number}]"
        self._by_secret[finding.secret] = placeholder
        return placeholder


def _digest(message_id: str, text: str) -> bytes:
    return hashlib.blake2b(f"{message_id}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class _Seen:
    """A chat as last redacted: digests of its raw messages, their redacted texts, its placeholders."""

    title: str
    redacted_title: str
    hashes: tuple[bytes, ...]
    texts: tuple[str, ...]
    chat: _Chat


class Remembered:
    """The last few chats redacted by this process, so that a chat read again with more messages (an
    agent's log that grew, synced live) has only its new messages scanned, numbered on from its earlier
    ones. Held in memory only, as any chat being written is; a chat not remembered is redacted whole."""

    def __init__(self, redaction: Redaction, chats: int = REMEMBERED):
        self.redaction = redaction
        self._chats: OrderedDict[str, _Seen] = OrderedDict()
        self._size = chats
        self._lock = threading.Lock()

    def redact(self, conversation: Conversation) -> tuple[Conversation, Counter[str]]:
        with self._lock:
            seen = self._chats.get(conversation.id)
        redacted, found, remembered = self.redaction.redact_after(conversation, seen)
        with self._lock:
            self._chats[conversation.id] = remembered
            self._chats.move_to_end(conversation.id)
            while len(self._chats) > self._size:
                self._chats.popitem(last=False)
        return redacted, found
