"""The query grammar every face shares (the search tool, `pastchats search`, the page): `"exact phrase"`
and `-word`, read out of the query before it is analysed (`storage.query.analysis`).

- `"connection refused"`: only what holds these words in this order (punctuation and case aside), ranked
  by them; the quoted words are searched too. Straight or curly quotes.
- `-docker`, `-"docker compose"`: no chat holding the word (in any form: `-test` leaves out "testing"
  too) or the phrase. A minus starts an exclusion only at the start of a word and before a letter:
  `e-mail`, `--force` and `-1` are searched as written.
- An unclosed quote is no phrase: its words are searched as words, and a note says so. A query of only
  exclusions has nothing to rank: `only_excluded`, which the tools answer with an error naming a call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A phrase (straight quotes, or the curly ones a phone or a word processor types), maybe excluded; or an
# excluded word: a minus at a word's start, before a letter (not `--force`, not `-1`).
_QUOTES = '"“”„'
_PART = re.compile(r'(?P<phrase>-?["“„][^"“”„]*["”“])|(?<!\S)-(?P<word>[^\W\d_]\S*)')
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class ParsedQuery:
    """A query as its grammar reads it."""

    text: str  # what is searched for: the words and the phrases' words, without quotes or exclusions
    loose: str = ""  # the words outside the phrases
    phrases: tuple[str, ...] = ()  # each quoted phrase, as typed (without its quotes)
    excluded: tuple[str, ...] = ()  # each excluded word or phrase, as typed (without its minus)
    notes: tuple[str, ...] = ()  # what the grammar did that the query may not have meant

    @property
    def only_excluded(self) -> bool:
        """Nothing to search for, only what to leave out."""
        return bool(self.excluded) and not self.text


def parse(query: str) -> ParsedQuery:
    """Read the phrases and exclusions out of `query`; everything else is the text searched as before."""
    phrases: list[str] = []
    excluded: list[str] = []
    searched: list[str] = []
    loose: list[str] = []
    unclosed = False
    at = 0
    for match in _PART.finditer(query):
        between = query[at : match.start()]
        unclosed = unclosed or any(mark in between for mark in _QUOTES)
        searched.append(between)
        loose.append(between)
        at = match.end()
        if match.group("word") is not None:
            word = match.group("word").rstrip(".,;:!?)]}")
            if _WORD.search(word):
                _add(excluded, word)
            continue
        quoted = match.group("phrase")
        words = " ".join(quoted.lstrip("-")[1:-1].split())
        if not _WORD.search(words):
            continue  # "" or "..." asks for nothing
        if quoted.startswith("-"):
            _add(excluded, words)
        else:
            _add(phrases, words)
            searched.append(f" {words} ")
    searched.append(query[at:])
    loose.append(query[at:])
    text, outside = " ".join(searched), " ".join(loose)
    notes = []
    if unclosed or any(mark in query[at:] for mark in _QUOTES):
        notes.append(
            "A quote in the query was not closed, so its words were searched as words, not as a phrase; "
            'close it ("like this") to search for the phrase.'
        )
        text, outside = re.sub(f"[{_QUOTES}]", " ", text), re.sub(f"[{_QUOTES}]", " ", outside)
    return ParsedQuery(" ".join(text.split()), " ".join(outside.split()), tuple(phrases), tuple(excluded), tuple(notes))


def _add(found: list[str], words: str) -> None:
    if words.casefold() not in (w.casefold() for w in found):
        found.append(words)


def plain_words(text: str) -> list[str]:
    """`text`'s words as a phrase is compared: letters and digits, lower-cased (punctuation and case aside)."""
    return _WORD.findall(text.casefold())


def holds_phrase(text: str, words: tuple[str, ...]) -> bool:
    """Whether `text` holds these words (`plain_words`) one after another."""
    if not words:
        return True
    if words[0] not in text.casefold():  # most texts lack even the first word: no need to split them
        return False
    held = plain_words(text)
    n = len(words)
    return any(tuple(held[i : i + n]) == words for i, word in enumerate(held) if word == words[0])
