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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from storage.models import Conversation
from storage.redaction.rules import Finding, RuleSet, files_stamp

__all__ = ["PLACEHOLDER", "Redaction", "redaction_counts"]

# A record's fields that are never chat text: ids, names of sources and roles, times, the reason it was set aside.
RECORD_FIELDS = frozenset(
    {"id", "source", "role", "created_at", "updated_at", "project", "url", "index", "quarantined"}
)
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
