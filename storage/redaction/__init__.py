"""Secrets out before anything is stored: each chat's text with every secret replaced by a typed placeholder.

`[redacted: github-pat #1]`: the kind says what stood there, so the passage still reads; the number is
the secret's within its chat, so the model can tell two keys apart and see the same one come back. The
placeholders are the store's only record of a redaction: `stats` counts them (`redaction_counts`).

Raw text first, then anything shorter. Every field of a chat is redacted as its source wrote it: the
ingestor redacts each conversation it writes (title, project, url, every message: import, sync,
reindex, and the pass that redacts a store written before, or with older rules: `Redaction.stamp`),
and what an importer shortens before that (a tool call, a tool's result, a title made from a message)
is redacted whole by `redact_part` just before the cut, under the redaction of the import reading it
(`Redaction.reading`). Such a part holds pending placeholders (`[redacted: kind #~digest]`, the digest
keyed by a secret of this process alone) that the chat's own pass numbers like every other secret. The
archive of agent logs keeps the files as their tools wrote them; nothing read from it reaches the store
unredacted.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from storage.models import Conversation, Message, Touch
from storage.redaction.rules import Finding, RuleSet, files_stamp, known_kinds

__all__ = ["PLACEHOLDER", "REMEMBERED", "Redaction", "Remembered", "check_allow", "redact_part", "redaction_counts"]

# A record's fields that are never chat text: ids, names of sources and roles, times, the reason it was set aside.
RECORD_FIELDS = frozenset({"id", "source", "role", "created_at", "updated_at", "index", "quarantined"})
REMEMBERED = 64  # chats `Remembered` keeps: more than a live sync brings at once
PLACEHOLDER = re.compile(r"\[redacted: ([a-z0-9][a-z0-9-]*) #(\d+)\]")
PENDING = re.compile(r"\[redacted: ([a-z0-9][a-z0-9-]*) #~([0-9a-f]{16})\]")
# What an allow entry naming a kind looks like (lower-case words joined by `-` or `_`): anything else is
# a regular expression.
_KIND_LIKE = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)+")
# Keys the digests of pending placeholders: they name a secret within this process and nowhere else.
_KEY = os.urandom(32)


def redaction_counts(texts: Iterable[str]) -> Counter[str]:
    """Secrets redacted in one chat's texts, by kind: its distinct placeholders."""
    seen = {match.groups() for text in texts for match in PLACEHOLDER.finditer(text)}
    return Counter(kind for kind, _ in seen)


def check_allow(entries: Iterable[str]) -> None:
    """Raise ValueError naming what is wrong with an allow entry: a kind no rule has (with the known
    kinds), or a regular expression that does not compile."""
    entries = list(entries)
    kinds = known_kinds() if entries else ()
    for entry in entries:
        if _KIND_LIKE.fullmatch(entry):
            if entry not in kinds:
                close = difflib.get_close_matches(entry.replace("_", "-"), kinds, n=3)
                hint = f"did you mean {' or '.join(close)}? " if close else ""
                raise ValueError(
                    f"redaction allow entry {entry!r} is not a kind of secret; {hint}the kinds are: "
                    f"{', '.join(kinds)} (to keep a secret by its text, give a regular expression: '^{entry}$')"
                )
            continue
        try:
            re.compile(entry)
        except re.error as exc:
            raise ValueError(f"redaction allow entry {entry!r} is not a regular expression: {exc}") from None


def _fold(text: str) -> str:
    """Every character but ASCII letters and digits as `-`, one for one (offsets stay the same)."""
    return _FOLD.sub("-", text)


_FOLD = re.compile(r"[^A-Za-z0-9]")


def _identity(secret: str) -> str:
    return hashlib.blake2b(secret.encode("utf-8", "surrogatepass"), key=_KEY, digest_size=8).hexdigest()


@dataclass(frozen=True)
class Redaction:
    """Whether and how chats are redacted. `allow`: kinds (as `stats` names them) never redacted, and
    regular expressions matched against each secret found: one that matches it in full keeps it. An
    entry of lower-case words joined by `-` or `_` names a kind, and must name a known one."""

    enabled: bool = True
    allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_allow(self.allow)

    @cached_property
    def rules(self) -> RuleSet:
        return RuleSet.load()

    @cached_property
    def _kept(self) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
        kinds = frozenset(entry for entry in self.allow if _KIND_LIKE.fullmatch(entry))
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
        if not kinds and not patterns:
            return self.rules.find(text)
        return [
            f for f in self.rules.find(text) if f.kind not in kinds and not any(p.fullmatch(f.secret) for p in patterns)
        ]

    def redact(self, conversation: Conversation) -> tuple[Conversation, Counter[str]]:
        """The conversation with its secrets replaced in every field (itself when none), and how many of each kind."""
        if not self.enabled:
            return conversation, Counter()
        chat = _Chat(self)
        title = chat.redact(conversation.title)
        messages = [chat.message(message) for message in conversation.messages]
        # Last: the project, and a link to the agent's file, may name a folder made from a path the chat holds.
        project = chat.redact(conversation.project, as_path=True) if conversation.project else conversation.project
        url = chat.redact(conversation.url, as_path=True) if conversation.url else conversation.url
        if not chat.placeholders:
            return conversation, Counter()
        update = {"title": title, "project": project, "url": url, "messages": messages}
        return conversation.model_copy(update=update), chat.counts

    def redact_after(self, conversation: Conversation, seen: _Seen | None) -> tuple[Conversation, Counter[str], _Seen]:
        """`redact`, scanning only what `seen` (this chat as last redacted) does not already hold: its
        messages that come back unchanged, at the same place, keep their redacted text, and the new ones
        are numbered on from the same secrets (a secret seen before keeps its number). Returns what to
        remember for the next time."""
        if not self.enabled:
            return conversation, Counter(), _Seen("", "", (), (), _Chat(self), (None, None), (None, None))
        same = seen is not None and seen.title == conversation.title
        chat = seen.chat.copy() if same and seen is not None else _Chat(self)
        title = seen.redacted_title if same and seen is not None else chat.redact(conversation.title)
        messages, hashes, texts = [], [], []
        for position, message in enumerate(conversation.messages):
            digest = _digest(message.id, message.text)
            if same and seen is not None and position < len(seen.hashes) and seen.hashes[position] == digest:
                text = seen.texts[position]
            else:
                same = False  # from the first change on, every message is scanned
                text = chat.redact(message.text)
            hashes.append(digest)
            texts.append(text)
            messages.append(chat.message(message, text))
        fields = (conversation.project, conversation.url)
        if seen is not None and seen.fields == fields and chat.placeholders == seen.chat.placeholders:
            project, url = seen.redacted_fields  # no new secret could make them read otherwise
        else:
            project, url = (chat.redact(value, as_path=True) if value else value for value in fields)
        remembered = _Seen(conversation.title, title, tuple(hashes), tuple(texts), chat.copy(), fields, (project, url))
        if not chat.placeholders:
            return conversation, Counter(), remembered
        update = {"title": title, "project": project, "url": url, "messages": messages}
        return conversation.model_copy(update=update), Counter(chat.counts), remembered

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

    def reading(self, conversations: Iterable[Conversation]) -> Iterator[Conversation]:
        """The conversations, each made (by its importer) under this redaction: whatever the importer
        shortens is redacted by it first (`redact_part`)."""
        iterator = iter(conversations)
        while True:
            token = _ACTIVE.set(self)
            try:
                conversation = next(iterator)
            except StopIteration:
                return
            finally:
                _ACTIVE.reset(token)
            yield conversation


_ACTIVE: ContextVar[Redaction | None] = ContextVar("pastchats_redaction", default=None)
_DEFAULT = Redaction()


# What `redact_part` found in the parts it saw last, by the text's digest: a live sync reads a grown
# log whole again, under the write lock, and its tool calls and results (and the title's first message)
# are not scanned again, only hashed. Findings are a few small tuples a part; the oldest go first.
_PARTS_KEPT = 8192
_parts: OrderedDict[tuple[tuple[str, ...], bytes], tuple[tuple[int, int, str, str], ...]] = OrderedDict()
_parts_lock = threading.Lock()


def redact_part(text: str) -> str:
    """Text an importer is about to shorten (a tool call, a tool's result, a title), its secrets taken
    out whole before the cut could split one, under the redaction of the import reading it (every rule
    when none is). Each becomes a pending placeholder that the chat's own pass numbers."""
    redaction = _ACTIVE.get() or _DEFAULT
    if not redaction.enabled:
        return text
    key = (redaction.allow, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
    with _parts_lock:
        spans = _parts.get(key)
        if spans is not None:
            _parts.move_to_end(key)
    if spans is None:
        spans = tuple((f.start, f.end, f.kind, _identity(f.secret)) for f in redaction.find(text))
        with _parts_lock:
            _parts[key] = spans
            while len(_parts) > _PARTS_KEPT:
                _parts.popitem(last=False)
    if not spans:
        return text
    parts: list[str] = []
    at = 0
    for start, end, kind, identity in spans:
        parts.append(text[at:start])
        parts.append(f"[redacted: {kind} #~{identity}]")
        at = end
    parts.append(text[at:])
    return "".join(parts)


class _Chat:
    """One chat's placeholders: the same secret always gets the same number, wherever it was found."""

    def __init__(self, redaction: Redaction):
        self.redaction = redaction
        self.placeholders: dict[str, str] = {}  # a secret's identity -> its placeholder
        self.counts: Counter[str] = Counter()  # distinct secrets, by kind
        self._folded: dict[str, tuple[str, str]] = {}  # a secret folded as a folder name -> (kind, identity)

    def copy(self) -> _Chat:
        chat = _Chat(self.redaction)
        chat.placeholders, chat.counts, chat._folded = dict(self.placeholders), Counter(self.counts), dict(self._folded)
        return chat

    def redact(self, text: str, *, as_path: bool = False) -> str:
        """`text` with its secrets replaced; `as_path`: also the secrets found so far in this chat as an
        agent writes them in a folder's name (Claude Code names a project's folder after its path,
        every character but letters and digits made `-`)."""
        text = self._redact(text)
        if not as_path or not self._folded:
            return text
        folded = _fold(text)
        spans = []
        for secret, (kind, identity) in self._folded.items():
            at = folded.find(secret)
            while at >= 0:
                spans.append((at, at + len(secret), kind, identity))
                at = folded.find(secret, at + len(secret))
        return self._replace(text, spans) if spans else text

    def message(self, message: Message, text: str | None = None) -> Message:
        """The message with its secrets replaced: its text (`text` when already redacted) and what its
        tool calls touched, a command line or a path holding a secret as any text does."""
        text = self.redact(message.text) if text is None else text
        touches = tuple(Touch(t.action, self.redact(t.target, as_path=t.action != "ran")) for t in message.touches)
        if text == message.text and touches == message.touches:
            return message
        return dataclasses.replace(message, text=text, touches=touches)

    def _redact(self, text: str) -> str:
        pending = [(m.start(), m.end(), m.group(1), m.group(2)) for m in PENDING.finditer(text)] if "#~" in text else []
        found = self.redaction.find(text)
        if pending and found:  # a pending placeholder is never read as (part of) a secret
            taken = bytearray(len(text))
            for start, end, _, _ in pending:
                taken[start:end] = b"\x01" * (end - start)
            found = [f for f in found if taken.find(1, f.start, f.end) < 0]
        spans = [*pending]
        for f in found:
            identity = _identity(f.secret)
            spans.append((f.start, f.end, f.kind, identity))
            if len(f.secret) >= 12:
                self._folded.setdefault(_fold(f.secret), (f.kind, identity))
        return self._replace(text, spans) if spans else text

    def _replace(self, text: str, spans: list[tuple[int, int, str, str]]) -> str:
        spans.sort()
        parts: list[str] = []
        at = 0
        for start, end, kind, identity in spans:
            if start < at:  # within one already replaced
                continue
            parts.append(text[at:start])
            parts.append(self._placeholder(kind, identity))
            at = end
        parts.append(text[at:])
        return "".join(parts)

    def _placeholder(self, kind: str, identity: str) -> str:
        known = self.placeholders.get(identity)
        if known is None:
            self.counts[kind] += 1
            known = self.placeholders[identity] = f"[redacted: {kind} #{self.counts[kind]}]"
        return known


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
    fields: tuple[str | None, str | None]  # its project and url as read
    redacted_fields: tuple[str | None, str | None]


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
