"""Secret rules as data: which strings in a chat are secrets, and of what kind.

The rules are gitleaks' maintained rule set (`gitleaks.toml`, MIT, see `gitleaks.LICENSE`; refreshed by
copying a newer release's `config/gitleaks.toml` over it) and a few of pastchats' own in the same format
(`pastchats.toml`) for what chats hold and source trees rarely do: passwords in URLs and connection
strings, `.env` lines with short values. Each rule is read as gitleaks reads it:

- `keywords`: the rule runs only on a text that holds one of them (lower-cased), which is what keeps a
  scan of ordinary prose cheap;
- `regex`: RE2 syntax; the `regex` package's version-1 mode reads it the same way (flags set mid-pattern
  last to the end of their group, POSIX classes);
- the secret is the `secretGroup`th group, else the first group that matched, else the whole match;
- `entropy`: a secret whose Shannon entropy (bits per character) is not above it is not one;
- `allowlists` (the rule's and the global one): a secret is kept when an allowlist's regexes match its
  target (`secret`, the whole `match` or its `line`) or it contains a stopword; `condition = "AND"`
  asks for every check the allowlist has. Path and commit checks do not apply to chats.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import ahocorasick

__all__ = ["Finding", "RuleSet", "rule_files"]

HERE = Path(__file__).parent
# pastchats' own rules come last: where a maintained rule and one of ours find the same secret, the
# maintained rule's kind is the more precise name.
RULE_FILES = (HERE / "gitleaks.toml", HERE / "pastchats.toml")
# Where findings overlap, the most precise name wins: a provider's format (github-pat), then a secret
# found by where it stands (an HTTP header in a curl line, a URL's password, a secret-named variable),
# then gitleaks' catch-all for secret-named values of high entropy.
RANKS = {
    "curl-auth-header": 1,
    "curl-auth-user": 1,
    "url-password": 2,
    "connection-password": 2,
    "env-secret": 2,
    "quoted-password": 2,
    "generic-api-key": 3,
}


def rule_files() -> tuple[Path, ...]:
    return RULE_FILES


POSIX_CLASSES = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:xdigit:]": "0-9a-fA-F",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:space:]": r"\s",
    "[:word:]": r"\w",
}
_FLAGS = re.compile(r"\(\?([imsU-]+)\)")


def compile_rule(pattern: str) -> re.Pattern[str]:
    r"""An RE2 pattern as Python's `re` reads it the same way.

    RE2 differs in three places the rules use: `\z` (end of text) is `\Z` here; POSIX classes
    (`[[:alnum:]]`) are spelled out; and flags set mid-pattern (`\b(?i)...`) last to the end of their
    group, where Python allows flags only at the start or scoped: `(?i)` becomes `(?i:` closed where
    its group closes.
    """
    text = pattern.replace(r"\z", r"\Z")
    for posix, spelled in POSIX_CLASSES.items():
        text = text.replace(posix, spelled)
    return re.compile(_scope_flags(text), re.ASCII)  # as in RE2, `\w`, `\s` and `\b` are ASCII


def _scope_flags(pattern: str) -> str:
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group, the flags set in it so far (each an open `(?f:`)
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            member = 2 if pattern[i + 1 : i + 2] == "^" else 1
            member += pattern[i + member : i + member + 1] == "]"  # a leading `]` is a member
            out.append(pattern[i : i + member])
            i += member
            continue
        elif char == "(":
            flags = _FLAGS.match(pattern, i)
            if flags and (i > 0 or len(scoped) > 1):
                out.append(f"(?{flags.group(1)}:")
                scoped[-1].append(flags.group(1))
                i = flags.end()
                continue
            scoped.append([])
        elif char == "|" and scoped[-1]:  # flags hold across `|` to the group's end: close, then reopen
            out.append(")" * len(scoped[-1]) + "|" + "".join(f"(?{f}:" for f in scoped[-1]))
            i += 1
            continue
        elif char == ")":
            out.append(")" * len(scoped.pop()))
        out.append(char)
        i += 1
    out.append(")" * len(scoped.pop()))
    return "".join(out)


def entropy(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    secret: str


@dataclass(frozen=True)
class Allowlist:
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    target: str  # "secret", "match" or "line"
    every: bool  # condition AND

    @classmethod
    def parse(cls, table: dict[str, Any]) -> Allowlist | None:
        regexes = tuple(compile_rule(p) for p in table.get("regexes", ()))
        stopwords = tuple(w.lower() for w in table.get("stopwords", ()))
        if not regexes and not stopwords:  # paths or commits only: nothing a chat can meet
            return None
        every = str(table.get("condition", "OR")).upper() == "AND"
        return cls(regexes, stopwords, str(table.get("regexTarget", "secret")), every)

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regexes:
            checks.append(any(p.search(target) for p in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        return all(checks) if self.every else any(checks)


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    group: int
    allowlists: tuple[Allowlist, ...]

    @classmethod
    def parse(cls, table: dict[str, Any]) -> Rule | None:
        if "regex" not in table or "path" in table:  # made for files of one kind (names chats lack)
            return None
        allowlists = tuple(a for a in map(Allowlist.parse, table.get("allowlists", ())) if a is not None)
        return cls(
            kind=str(table["id"]),
            pattern=compile_rule(table["regex"]),
            keywords=tuple(k.lower() for k in table.get("keywords", ())),
            entropy=float(table.get("entropy", 0.0)),
            group=int(table.get("secretGroup", 0)),
            allowlists=allowlists,
        )

    def find(self, text: str, kept: Sequence[Allowlist]) -> Iterable[Finding]:
        for match in self.pattern.finditer(text):
            start, end = self._secret_span(match)
            secret = text[start:end]
            if not secret or (self.entropy and entropy(secret) <= self.entropy):
                continue
            line = text[text.rfind("\n", 0, match.start()) + 1 : _line_end(text, match.end())]
            if any(a.allows(secret, match.group(0), line) for a in (*kept, *self.allowlists)):
                continue
            yield Finding(self.kind, start, end, secret)

    def _secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        if self.group and self.group <= (match.re.groups or 0):
            return match.span(self.group)
        for index in range(1, (match.re.groups or 0) + 1):
            if match.group(index):
                return match.span(index)
        start, end = match.span()
        text = match.group(0)
        return start + (len(text) - len(text.lstrip("\n"))), end - (len(text) - len(text.rstrip("\n")))


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


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
    """A digest of the rule files: what a store's chats were redacted with. Read without compiling the
    rules (~0.6 s), so that opening a store to search can tell whether it must be redacted again."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


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
            data = path.read_bytes()
            config = tomllib.loads(data.decode("utf-8"))
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
        findings = [f for rule in self.candidates(text) for f in rule.find(text, self.kept)]
        if not findings:
            return []
        findings.sort(key=lambda f: (RANKS.get(f.kind, 0), f.start, -(f.end - f.start)))
        taken: list[Finding] = []
        for finding in findings:
            if all(finding.end <= other.start or finding.start >= other.end for other in taken):
                taken.append(finding)
        return sorted(taken, key=lambda f: f.start)
