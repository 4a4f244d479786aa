"""Secret rules as data: which strings in a chat are secrets, and of what kind.

The rules are gitleaks' maintained rule set (`gitleaks.toml`, MIT, see `gitleaks.LICENSE`; refreshed by
copying a newer release's `config/gitleaks.toml` over it) and pastchats' own in the same format
(`pastchats.toml`) for what chats hold and source trees rarely do: passwords in URLs, connection
strings, shell commands and prose, `.env` lines with short values. Each rule is read as gitleaks reads it:

- `keywords`: the rule runs only on a text that holds one of them (lower-cased), which is what keeps a
  scan of ordinary prose cheap;
- `regex`: RE2, run by RE2 itself (google-re2) over the text's UTF-8 bytes as gitleaks' Go regexp
  does: linear time whatever the text, and the rules' own semantics (flags set mid-pattern, POSIX
  classes, ASCII `\\w`, `\\s` and `\\b`); a key may end at punctuation too (`CHAT_KEY_END`);
- the secret is the `secretGroup`th group, else the first group that matched, else the whole match;
- `entropy`: a secret whose Shannon entropy (bits per character) is not above it is not one;
- `allowlists` (the rule's and the global one): a secret is kept when an allowlist's regexes match its
  target (`secret`, the whole `match` or its `line`) or it contains a stopword; `condition = "AND"`
  asks for every check the allowlist has. Path and commit checks do not apply to chats: an allowlist
  that needs one never keeps anything.

A scan costs time linear in the text and in its findings: each rule is one RE2 pass, a line is read
for an allowlist at most once, stopwords are one Aho-Corasick pass over the secret, and overlapping
findings are settled against a map of the bytes already taken.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import tomllib
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import ahocorasick
import re2

__all__ = ["Finding", "RuleSet", "compile_rule", "known_kinds", "rule_files"]

HERE = Path(__file__).parent
# pastchats' own rules come last: where a maintained rule and one of ours find the same secret, the
# maintained rule's kind is the more precise name.
RULE_FILES = (HERE / "gitleaks.toml", HERE / "pastchats.toml")
# Where findings overlap, the most precise name wins: a provider's format (github-pat), then a secret
# found by where it stands (an HTTP header, a command's password option, a URL's password, a
# secret-named variable), then catch-alls: gitleaks' secret-named values of high entropy, and
# passwords named in prose.
RANKS = {
    "curl-auth-header": 1,
    "curl-auth-user": 1,
    "http-auth-header": 1,
    "command-password": 1,
    "url-password": 2,
    "connection-password": 2,
    "env-secret": 2,
    "quoted-password": 2,
    "yaml-password": 2,
    "generic-api-key": 3,
    "prose-password": 4,
    "prose-token": 4,
}

# Where gitleaks' rules let a key end: a quote, a space, `;`, an escaped line break or the end, as keys
# end in source code. In chats a key ends a sentence or a clause too (`my key is sk-...AA.`, `...AA)`,
# `?api_key=...&`, `密钥：...，`): the one change made to the maintained rules as they are read is that
# the same group also takes ASCII punctuation no key format holds and any non-ASCII character.
KEY_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
CHAT_KEY_END = r"""(?:[\x60'"\s;.,:!?&)\]}>|*]|\\[nr]|$|[^\x00-\x7f])"""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a rule that does not compile is raised as an error naming it, not logged by RE2
_OPTIONS.max_mem = 64 << 20  # the largest maintained rules need more than RE2's default 8 MiB to compile


def rule_files() -> tuple[Path, ...]:
    return RULE_FILES


def compile_rule(pattern: str) -> Any:
    """An RE2 pattern compiled by RE2 (bytes in, bytes out: the scan runs over a text's UTF-8)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"not an RE2 pattern ({exc}): {pattern[:120]}") from None


def entropy(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int  # characters into the text
    end: int
    secret: str


class _Text:
    """One text under scan: its UTF-8 bytes, its lines found once, each line read once."""

    def __init__(self, text: str):
        # A lone surrogate becomes '?': one byte for one character, so offsets still map to the text.
        self.data = text.encode("utf-8", "replace")
        self.ascii = len(self.data) == len(text)
        self._newlines: list[int] | None = None
        self._lines: dict[int, str] = {}
        self.verdicts: dict[tuple[int, int], bool] = {}  # (allowlist, line start) -> kept

    def line_at(self, start: int, end: int) -> tuple[int, str]:
        """The line (or lines) holding bytes start..end, and where it starts."""
        if self._newlines is None:
            self._newlines = []
            at = self.data.find(b"\n")
            while at >= 0:
                self._newlines.append(at)
                at = self.data.find(b"\n", at + 1)
        newlines = self._newlines
        before = bisect_left(newlines, start)
        first = newlines[before - 1] + 1 if before else 0
        after = bisect_right(newlines, max(start, end - 1))
        last = newlines[after] if after < len(newlines) else len(self.data)
        if first not in self._lines:
            self._lines[first] = self.data[first:last].decode("utf-8", "replace")
        return first, self._lines[first]

    def characters(self, offsets: Sequence[int]) -> dict[int, int]:
        """Byte offsets (each at a character's start) as character offsets, in one pass over the text."""
        if self.ascii:
            return {at: at for at in offsets}
        out: dict[int, int] = {}
        chars = previous = 0
        for at in sorted(set(offsets)):
            chars += len(self.data[previous:at].decode("utf-8", "replace"))
            out[at], previous = chars, at
        return out


@dataclass(frozen=True)
class Allowlist:
    regexes: tuple[Any, ...]
    stopwords: Any  # an Aho-Corasick automaton of the lower-cased words, or None
    target: str  # "secret", "match" or "line"
    every: bool  # condition AND

    @classmethod
    def parse(cls, table: dict[str, Any]) -> Allowlist | None:
        every = str(table.get("condition", "OR")).upper() == "AND"
        if every and (table.get("paths") or table.get("commits")):
            return None  # needs a file's path or a commit too: a chat has neither
        patterns = list(table.get("regexes", ()))
        # One pass for the allowlist, not one per regex: RE2 runs an alternation in a single scan.
        regexes = (compile_rule("|".join(f"(?:{p})" for p in patterns)),) if patterns else ()
        words = [w.lower() for w in table.get("stopwords", ()) if w]
        if not regexes and not words:  # paths or commits only: nothing a chat can meet
            return None
        stopwords = None
        if words:
            stopwords = ahocorasick.Automaton()
            for word in words:
                stopwords.add_word(word, word)
            stopwords.make_automaton()
        return cls(regexes, stopwords, str(table.get("regexTarget", "secret")), every)

    def allows(self, secret: str, match: bytes, text: _Text, span: tuple[int, int]) -> bool:
        if self.target == "line":  # one verdict per line, however many findings it holds
            start, line = text.line_at(*span)
            key = (id(self), start)
            if key not in text.verdicts:
                text.verdicts[key] = self._check(secret, line)
            regexes_hold = text.verdicts[key]
            return self._combine(regexes_hold, secret)
        target: str | bytes = match if self.target == "match" else secret
        return self._combine(self._check(secret, target), secret)

    def _check(self, secret: str, target: str | bytes) -> bool:
        return any(p.search(target) for p in self.regexes) if self.regexes else self.every

    def _combine(self, regexes_hold: bool, secret: str) -> bool:
        if self.stopwords is None:
            return regexes_hold
        has_stopword = next(self.stopwords.iter(secret.lower()), None) is not None
        if not self.regexes:
            return has_stopword
        return (regexes_hold and has_stopword) if self.every else (regexes_hold or has_stopword)


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: Any
    keywords: tuple[str, ...]
    entropy: float
    group: int
    allowlists: tuple[Allowlist, ...]
    groups: int = field(default=0)

    @classmethod
    def parse(cls, table: dict[str, Any]) -> Rule | None:
        if "regex" not in table or "path" in table:  # made for files of one kind (names chats lack)
            return None
        allowlists = tuple(a for a in map(Allowlist.parse, table.get("allowlists", ())) if a is not None)
        try:
            pattern = compile_rule(str(table["regex"]).replace(KEY_END, CHAT_KEY_END))
        except ValueError as exc:
            raise ValueError(f"rule {table.get('id')!r}: {exc}") from None
        return cls(
            kind=str(table["id"]),
            pattern=pattern,
            keywords=tuple(k.lower() for k in table.get("keywords", ())),
            entropy=float(table.get("entropy", 0.0)),
            group=int(table.get("secretGroup", 0)),
            allowlists=allowlists,
            groups=pattern.groups,
        )

    def find(self, text: _Text, kept: Sequence[Allowlist]) -> Iterator[tuple[int, int, str]]:
        """(start, end, secret): byte offsets into the text's UTF-8, and the secret."""
        data = text.data
        for match in self.pattern.finditer(data):
            start, end = self._secret_span(match, data)
            if start >= end:
                continue
            secret = data[start:end].decode("utf-8", "replace")
            if self.entropy and entropy(secret) <= self.entropy:
                continue
            whole = match.span()
            if any(a.allows(secret, match.group(0), text, whole) for a in (*kept, *self.allowlists)):
                continue
            yield start, end, secret

    def _secret_span(self, match: Any, data: bytes) -> tuple[int, int]:
        if self.group and self.group <= self.groups:
            return tuple(match.span(self.group))
        for index in range(1, self.groups + 1):
            start, end = match.span(index)
            if start >= 0 and end > start:
                return start, end
        start, end = match.span()
        while start < end and data[start] == 10:
            start += 1
        while end > start and data[end - 1] == 10:
            end -= 1
        return start, end


def _extend(rules: list[Rule], table: dict[str, Any]) -> None:
    """Add a table's allowlists to the rule of its id (a later file refines the maintained rules)."""
    more = tuple(a for a in map(Allowlist.parse, table.get("allowlists", ())) if a is not None)
    for index, rule in enumerate(rules):
        if rule.kind == table.get("id"):
            rules[index] = dataclasses.replace(rule, allowlists=rule.allowlists + more)
            return
    raise ValueError(f"rule {table.get('id')!r} extends no rule")


@cache
def files_stamp(files: tuple[Path, ...] = RULE_FILES) -> str:
    """A digest of the rule files and the engine: what a store's chats were redacted with. Read without
    compiling the rules, so that opening a store to search can tell whether it must be redacted again."""
    digest = hashlib.sha256(b"re2\x00")
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def known_kinds(files: tuple[Path, ...] = RULE_FILES) -> tuple[str, ...]:
    """The kinds the rules name, read without compiling them (an allow list is checked against these)."""
    kinds: dict[str, None] = {}
    for path in files:
        for table in tomllib.loads(path.read_text(encoding="utf-8")).get("rules", ()):
            if "regex" in table and "path" not in table:
                kinds[str(table["id"])] = None
    return tuple(kinds)


class RuleSet:
    """Every rule, ready to scan text. Built once per process (`load`)."""

    def __init__(self, rules: Sequence[Rule], kept: Sequence[Allowlist], stamp: str):
        self.rules = tuple(rules)
        self.kept = tuple(kept)
        self.stamp = stamp  # changes whenever a rule does: a store redacted with older rules is scanned again
        self.kinds = tuple(dict.fromkeys(rule.kind for rule in self.rules))
        self._always = tuple(rule for rule in self.rules if not rule.keywords)
        by_keyword: dict[str, list[Rule]] = {}
        for rule in self.rules:
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(rule)
        # One pass over a text finds every keyword it holds (Aho-Corasick, as gitleaks does): scanning
        # for each keyword in turn would cost more than the rules themselves.
        self._keywords = ahocorasick.Automaton()
        for keyword, rules in by_keyword.items():
            self._keywords.add_word(keyword, tuple(rules))
        if by_keyword:
            self._keywords.make_automaton()

    @classmethod
    @cache
    def load(cls, files: tuple[Path, ...] = RULE_FILES) -> RuleSet:
        rules: list[Rule] = []
        kept: list[Allowlist] = []
        for path in files:
            config = tomllib.loads(path.read_text(encoding="utf-8"))
            for table in [config.get("allowlist", {}), *config.get("allowlists", ())]:
                allowlist = Allowlist.parse(table) if table else None
                if allowlist is not None:
                    kept.append(allowlist)
            for table in config.get("rules", ()):
                rule = Rule.parse(table)
                if rule is not None:
                    rules.append(rule)
                elif "regex" not in table and "path" not in table:  # more allowlists for a rule above
                    _extend(rules, table)
        return cls(rules, kept, files_stamp(files))

    def candidates(self, text: str) -> list[Rule]:
        """The rules whose keywords `text` holds, and those without keywords."""
        chosen = dict.fromkeys(self._always)
        if self._keywords.kind == ahocorasick.AHOCORASICK:
            for _, rules in self._keywords.iter(text.lower()):
                chosen.update(dict.fromkeys(rules))
        return list(chosen)

    def find(self, text: str) -> list[Finding]:
        """The secrets in `text`, in order, none overlapping another (`RANKS` settles overlaps)."""
        candidates = self.candidates(text)
        if not candidates:
            return []
        scanned = _Text(text)
        found = [
            (RANKS.get(rule.kind, 0), start, end, rule.kind, secret)
            for rule in candidates
            for start, end, secret in rule.find(scanned, self.kept)
        ]
        if not found:
            return []
        found.sort(key=lambda f: (f[0], f[1], f[1] - f[2]))
        taken = bytearray(len(scanned.data))  # 1 where a finding kept so far stands
        kept = []
        for _, start, end, kind, secret in found:
            if taken.find(1, start, end) < 0:
                taken[start:end] = b"\x01" * (end - start)
                kept.append((start, end, kind, secret))
        kept.sort()
        at = scanned.characters([offset for start, end, _, _ in kept for offset in (start, end)])
        return [Finding(kind, at[start], at[end], secret) for start, end, kind, secret in kept]
