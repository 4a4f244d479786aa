"""What reads as a `<chat` or `</chat` tag, look-alikes included: where chat text could forge our blocks.

A character counts as the one it looks like when Unicode's confusables data (UTS #39's
confusables.txt, as the `confusable_homoglyphs` package ships it) maps it there, after compatibility
decomposition (full-width and small forms, circled and mathematical letters) with its combining
marks dropped (ċ, ḥ, ≮), in either case (Cyrillic н is a small Н). Brackets are `<` and the angle
brackets (〈 ⟨ 〈), and everything Unicode confuses with them (˂ ‹ ❮ ᐸ). Between a tag's characters,
anything that takes no visible room is skipped, however long the run: whitespace, format characters
(zero-width spaces and joiners, the soft hyphen, bidi controls, tag characters), combining marks,
unassigned code points and the Hangul fillers.

The data loads on first use (~50 ms, once a process): ASCII text without `<` never needs it.
"""

from __future__ import annotations

import functools
import re
import unicodedata

TYPE_CHECKING = False  # not typing's: `pastchats read` renders without importing it (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator

# What each character is to the tag check, as one character of a "shape" string of the same length.
BRACKET, SLASH, SKIP, OTHER = "<", "/", " ", "x"
_TAG = re.compile(r"< *(?:/ *)?c *h *a *t")
# The characters the confusables data is searched from: each maps to the shape letter before it.
_PROTOTYPES = {BRACKET: "<\u276c", SLASH: "/", "c": "cC", "h": "hH", "a": "aA", "t": "tT"}
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Cs", "Mn", "Me", "Zl", "Zp", "Zs"})
# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties) is the categories above within its
# ranges, plus these four letters; Python's unicodedata has no such property to ask.
_HANGUL_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")


def tag_brackets(text: str) -> Iterator[int]:
    """The position of the bracket of each `<chat` / `</chat` that `text` reads as."""
    if text.isascii():
        shape = text.translate(_ascii_shapes())
    else:
        # Every character that reads as a bracket decomposes to one of `_brackets`: most texts are
        # done here, at the speed of C (a substring search for each), without a look at each character.
        decomposed = unicodedata.normalize("NFKD", text)
        if not any(bracket in decomposed for bracket in _brackets()):
            return iter(())
        shape = text.translate({ord(ch): _shape(ch) for ch in set(text)})
    return (found.start() for found in _TAG.finditer(shape))


@functools.lru_cache(maxsize=8192)
def _shape(ch: str) -> str:
    if _invisible(ch):
        return SKIP
    letters = [part for part in unicodedata.normalize("NFKD", ch) if not _invisible(part)]
    if len(letters) != 1:
        return SKIP if not letters else OTHER
    table = _shapes_from_confusables()
    letter = letters[0]
    return table.get(letter) or table.get(letter.casefold()) or table.get(letter.upper()) or OTHER


def _invisible(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in _INVISIBLE_CATEGORIES or ch in _HANGUL_FILLERS


@functools.cache
def _ascii_shapes() -> dict[int, str]:
    return {code: _shape(chr(code)) for code in range(128)}


@functools.cache
def _brackets() -> tuple[str, ...]:
    """The characters whose shape is a bracket, in either case."""
    table = _shapes_from_confusables()
    return tuple({case for ch, shape in table.items() if shape == BRACKET for case in (ch, ch.lower(), ch.upper())})


@functools.cache
def _shapes_from_confusables() -> dict[str, str]:
    """Each character Unicode confuses with a tag's characters, mapped to its shape letter."""
    from confusable_homoglyphs.confusables import confusables_data

    # The data links each prototype to the characters confusable with it, and back.
    table: dict[str, str] = {}
    for shape, prototypes in _PROTOTYPES.items():
        todo = list(prototypes)
        while todo:
            ch = todo.pop()
            if ch in table:
                continue
            table[ch] = shape
            todo += [entry["c"] for entry in confusables_data.get(ch, ()) if len(entry["c"]) == 1]
    return table
