"""Chat text that is safe to store, to print on a terminal and to show a model; ids that can be typed.

Chat text comes from other programs: terminal logs full of colour codes, pasted escape sequences,
JSON holding lone surrogates. None of it may act on a terminal (clear the screen, set its title,
write the clipboard with OSC 52) or make text read other than it is (bidi overrides). `clean`:
- removes terminal escape sequences whole (CSI `ESC [ … final`, OSC `ESC ] … BEL`, DCS/SOS/PM/APC
  strings, two-character escapes; their 8-bit forms too), so colour codes leave no `[31m` behind;
- removes every other control character but tab and line feed, DEL and the C1 controls; a carriage
  return becomes a line break (it could otherwise overwrite a line on a terminal);
- removes the bidi controls (embeddings, overrides, isolates, the LRM, RLM and ALM marks);
- replaces lone surrogates (from `\\ud800` escapes in JSON) with U+FFFD.
Everything else is kept: emoji (their zero-width joiners too), CJK, right-to-left letters.

It is applied where chat text enters the store (`importers.registry.read`, every import and sync)
and again where text leaves for a terminal or a model (`tools.render`, the tools' structured
content, the CLI's output), for text stored before it existed.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: the CLI's read commands import this without it (start-up)
if TYPE_CHECKING:
    from typing import Any

_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
_OSC = r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
_STRING = r"(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c\n]*(?:\x1b\\|\x9c)?"
_OTHER_ESCAPE = r"\x1b[ -/]*[0-~]?"
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_SURROGATES = "\ud800-\udfff"
# A terminal stops an unterminated OSC or DCS string at nothing; here it stops at the line's end,
# so one stray ESC cannot take the rest of a message with it.
_UNSAFE = re.compile(f"{_CSI}|{_OSC}|{_STRING}|{_OTHER_ESCAPE}|\r\n?|[{_CONTROLS}{BIDI_CONTROLS}]|[{_SURROGATES}]")
# Every character that can start what `_UNSAFE` matches: one character class scans ~10x faster.
_UNSAFE_START = re.compile(f"[{_CONTROLS}\r{BIDI_CONTROLS}{_SURROGATES}]")
_SURROGATE = re.compile(f"[{_SURROGATES}]")


def clean(text: str) -> str:
    """`text` without what could act on a terminal or hide how it reads (see the module's docstring)."""
    # Every unsafe character is a control, format character or surrogate, none printable: most texts
    # are cleared by `isprintable` (~3x faster than the class), the rest (emoji joiners, odd spaces)
    # by the class; only text with something to remove is copied.
    if text.replace("\n", " ").replace("\t", " ").isprintable() or _UNSAFE_START.search(text) is None:
        return text
    return _UNSAFE.sub(_replacement, text)


def _replacement(found: re.Match[str]) -> str:
    unsafe = found.group()
    if unsafe[0] == "\r":
        return "\n"
    if _SURROGATE.match(unsafe):
        return "\ufffd"
    return ""


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate code point (not encodable as UTF-8; `clean` replaces it)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def clean_all(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string in it, keys too, cleaned."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean_all(key): clean_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_all(item) for item in value]
    return value


def id_problem(value: str) -> str | None:
    """Why `value` (surrounding whitespace already stripped) cannot be a chat's or a message's id, or
    None. An id is typed back (`read_chat`, `pastchats read`, `pastchats delete`), so it is one line
    with nothing invisible in it: no control character or line break, no format character (bidi
    controls, zero-width spaces), no lone surrogate."""
    if not value:
        return "the id is empty or only whitespace"
    if value.isprintable():  # almost every id: no character to look at one by one
        return None
    import unicodedata  # deferred: an id that is not printable is rare

    for ch in value:
        if unicodedata.category(ch) in _NOT_IN_AN_ID:
            what = "a line break" if len(f"a{ch}b".splitlines()) > 1 else f"the character U+{ord(ch):04X}"
            return f"the id holds {what}; an id must be one line with nothing invisible in it"
    return None


# Controls (line breaks among them), format characters, surrogates, line and paragraph separators.
_NOT_IN_AN_ID = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
