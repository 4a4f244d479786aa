"""Reading JSON incrementally, so memory stays bounded by one record whatever the file's size.

Exports are single JSON documents that can run to gigabytes, arrive cut short, hold bytes that are not
UTF-8, or (when hostile) nest without end. Records are built one at a time from parser events
(ijson); each is complete or reported, and a break in the file keeps everything read before it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import IO, Any

import ijson

from importers._safe import SURROGATES_NOTE
from importers.base import ImportReport
from storage.errors import PastchatsError

# Far deeper than any real export (a ChatGPT message sits ~8 levels down), far shallower than what
# would exhaust the stack of anything that later walks the record (pydantic, json.dumps).
MAX_DEPTH = 200
_READ = 1 << 16
# A JSON escape from its backslash on (a surrogate pair whole), matched left to right so that the `u`
# after an escaped backslash is not taken for an escape. A lone surrogate stops the parser (it cannot
# make UTF-8 of it); it becomes U+FFFD, as `storage.safe_text.clean` makes it in every other format.
_ESCAPE = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.?)", re.S
)
_LONGEST_ESCAPE = 12


class BrokenJson(PastchatsError):
    """The JSON stopped parsing part way; the records before it were yielded."""


class _NotARecord(BrokenJson):
    """Valid JSON, but a lone object the caller does not take for a record."""


@dataclass(frozen=True)
class Malformed:
    """A record that could not be built (yielded in its place, so the records after it still come)."""

    reason: str


class CleanUtf8:
    """A binary stream whose bytes are valid UTF-8 JSON text: a leading BOM dropped, bad bytes made
    U+FFFD, lone surrogate escapes (`\\udc00`) made `\\ufffd` (`replaced` counts them).

    The JSON parser stops at the first invalid byte or lone surrogate; one must not cost the rest of a file.
    """

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._start = True
        self._held = ""  # an escape that may go on in the next read
        self.replaced = 0

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # the parser asks for nothing to learn whether the stream is binary
        while True:
            data = self._raw.read(size if size > 0 else _READ)
            text = self._decoder.decode(data, final=not data)
            if self._start and text:
                text = text.removeprefix("\ufeff")
                self._start = False
            text = self._escapes(self._held + text, final=not data)
            # The decoder may hold back a split character; an empty answer would read as the end.
            if text or not data:
                return text.encode("utf-8", "surrogatepass")

    def _escapes(self, text: str, final: bool) -> str:
        if "\\" not in text:
            self._held = ""
            return text
        parts: list[str] = []
        at = 0
        for found in _ESCAPE.finditer(text):
            if not final and found.start() > len(text) - _LONGEST_ESCAPE:
                break  # may be cut short: read again with what follows
            if found.group(1):
                parts += [text[at : found.start()], "\\ufffd"]
                at = found.end()
                self.replaced += 1
        else:
            self._held = ""
            return "".join(parts) + text[at:]
        self._held = text[found.start() :]
        return "".join(parts) + text[at : found.start()]


def _number(value: Any) -> Any:
    # ijson gives Decimal for non-integers (never failing on 1e400); the importers expect floats.
    return float(value) if isinstance(value, Decimal) else value


def _build(first: tuple[str, Any], events: Iterator[tuple[str, Any]]) -> Any:
    """One value from its events, without recursion. Too deep: the rest of it is skipped, Malformed."""
    event, value = first
    if event not in ("start_map", "start_array"):
        return _number(value)
    stack: list[Any] = [{} if event == "start_map" else []]
    keys: list[str | None] = [None]
    for event, value in events:
        if event in ("start_map", "start_array"):
            if len(stack) >= MAX_DEPTH:
                _skip(events, 1)
                _skip(events, len(stack))
                return Malformed(f"nested too deeply to read (more than {MAX_DEPTH} levels)")
            stack.append({} if event == "start_map" else [])
            keys.append(None)
            continue
        if event == "map_key":
            keys[-1] = value
            continue
        if event in ("end_map", "end_array"):
            done = stack.pop()
            keys.pop()
            if not stack:
                return done
            value = done
        else:
            value = _number(value)
        container = stack[-1]
        if isinstance(container, list):
            container.append(value)
        else:
            container[keys[-1]] = value
    raise BrokenJson("cut off in the middle of a record")


def _skip(events: Iterator[tuple[str, Any]], depth: int) -> None:
    """Consume events until `depth` open containers have closed."""
    for event, _ in events:
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                return
    raise BrokenJson("cut off in the middle of a record")


def _events(stream: IO[bytes], report: ImportReport | None, multiple: bool = False) -> Iterator[tuple[str, Any]]:
    clean = CleanUtf8(stream)
    events = ijson.basic_parse(clean, multiple_values=multiple, buf_size=_READ)
    try:
        yield from events
    except ijson.JSONError as exc:
        raise BrokenJson(_describe(exc)) from None
    finally:
        if clean.replaced and report is not None:
            report.note(SURROGATES_NOTE)


def _describe(exc: Exception) -> str:
    text = str(exc).split("\n", 1)[0].strip()
    return text.removeprefix("parse error: ").removeprefix("lexical error: ") or "not valid JSON"


def iter_json_array(stream: IO[bytes], report: ImportReport | None = None) -> Iterator[Any]:
    """Items of a top-level JSON array, one at a time (a too-deep item comes as `Malformed`); `report`
    is told when a lone surrogate was replaced.

    Raises BrokenJson, after yielding every complete item, where the data stops being valid.
    """
    events = _events(stream, report)
    count = 0
    try:
        first = next(events, None)
        if first is None:
            raise BrokenJson("not valid JSON (the file is empty)")
        if first[0] != "start_array":
            try:
                if first[0] == "start_map":
                    _skip(events, 1)  # read to its end, without building it: is it JSON at all?
            except BrokenJson as exc:
                raise BrokenJson(f"not valid JSON ({exc})") from None
            raise BrokenJson(f"expected a JSON list, found {_kind(first[0])}")
        for event in events:
            if event[0] == "end_array":
                return
            yield _build(event, events)
            count += 1
        raise BrokenJson("cut off before the list closed")
    except BrokenJson as exc:
        raise BrokenJson(f"{exc} (after item #{count})" if count else str(exc)) from None


def iter_json_values(
    stream: IO[bytes],
    list_key: str,
    *,
    lone_object: Callable[[dict[str, Any]], bool] = lambda _: True,
    lone_object_error: str = "a JSON object that is not a record",
    report: ImportReport | None = None,
) -> Iterator[Any]:
    """Records of a document: the items of a top-level list, or of the list under `list_key` in a
    top-level object, or a top-level object itself (when it has no such list and `lone_object` accepts
    it; else BrokenJson(lone_object_error)). Several documents one after another (JSON Lines) are read
    in turn. A too-deep record comes as `Malformed`. `report` is told when a lone surrogate was replaced."""
    events = _events(stream, report, multiple=True)
    count = 0
    try:
        for first in events:
            if first[0] == "start_array":
                for event in events:
                    if event[0] == "end_array":
                        break
                    yield _build(event, events)
                    count += 1
            elif first[0] == "start_map":
                count += yield from _object_records(events, list_key, lone_object, lone_object_error)
            else:
                yield _build(first, events)
                count += 1
    except _NotARecord:
        raise
    except BrokenJson as exc:
        raise BrokenJson(f"{exc} (after record #{count})" if count else f"not valid JSON ({exc})") from None


def _object_records(
    events: Iterator[tuple[str, Any]], list_key: str, lone_object: Callable[[dict[str, Any]], bool], error: str
) -> Generator[Any, None, int]:
    """Inside a top-level object: stream the `list_key` list's items; otherwise the object is a record.

    Returns how many records were yielded (through StopIteration, for `yield from`)."""
    record: dict[str, Any] = {}
    streamed = 0
    for event, value in events:
        if event == "end_map":
            break
        key = value
        first = next(events, None)
        if first is None:
            raise BrokenJson("cut off in the middle of a record")
        if key == list_key and first[0] == "start_array":
            for item in events:
                if item[0] == "end_array":
                    break
                yield _build(item, events)
                streamed += 1
            continue
        record[key] = _build(first, events)
        if isinstance(record[key], Malformed):
            _skip(events, 1)  # the rest of the object
            yield record[key]
            return streamed + 1
    else:
        raise BrokenJson("cut off in the middle of a record")
    if streamed:
        return streamed
    if not lone_object(record):
        raise _NotARecord(error)
    yield record
    return 1


def _kind(event: str) -> str:
    return {"start_map": "an object", "string": "a string", "number": "a number", "boolean": "true/false"}.get(
        event, "null"
    )
