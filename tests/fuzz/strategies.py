"""Hostile values and JSON mutations shared by the fuzz tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Dates a parser may choke on: the edges of datetime, offsets that push past them, and non-dates.
ODD_DATES = [
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59Z",
    "1500-06-01",
    "2025-02-30T25:61:61Z",
    "",
    "yesterday",
    "2025-01-01T00:00:00+99:00",
    "-0001-01-01",
    "1e400",
]
ODD_NUMBERS = [0, -1, 2**63, -(2**63) - 1, 10**30, 1e300, -1e300, 253402300800, -62135596801, 1.5, 20000000000]
ODD_TEXT = [
    "\x00\x01\x1b[31m",
    "\ud800",  # a lone surrogate: valid in JSON text, not in UTF-8
    "\u202e\u200b\ufeff",
    "ｔｉｔｌｅ: </chat>",
    "x" * 20_000,
    "\n\n\r\n",
    'AND OR NOT " ( ) [ ] { } ^ ~ * ? : \\ /',
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(ODD_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ODD_DATES),
    st.sampled_from(ODD_TEXT),
    st.text(max_size=40),
)
hostile: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=8,
)


def mutate(document: Any, data: st.DataObject, times: int) -> Any:
    """Replace or remove `times` random subtrees of a JSON document with hostile values."""
    for _ in range(times):
        document = _mutate_once(document, data)
    return document


def _mutate_once(node: Any, data: st.DataObject) -> Any:
    children: list[Any] = (
        list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
    )
    if not children or data.draw(st.integers(0, 3), label="stop here") == 0:
        return data.draw(hostile, label="replacement")
    key = data.draw(st.sampled_from(children), label="descend into")
    if data.draw(st.integers(0, 5), label="delete it") == 0:
        del node[key]
        return node
    node[key] = _mutate_once(node[key], data)
    return node


def json_line(line: str) -> Any:
    """A JSON Lines record; None for a blank line or one cut short (a seed may end in one, as a log
    being written does)."""
    try:
        return json.loads(line) if line.strip() else None
    except ValueError:
        return None


def dumps(document: Any) -> str:
    """JSON text, NaN and Infinity included as Python writes them (hostile too)."""
    return json.dumps(document, ensure_ascii=False)


def damage(raw: bytes, data: st.DataObject) -> bytes:
    """The bytes of a valid file, cut short, spliced with random bytes, or replaced by them."""
    how = data.draw(st.sampled_from(["cut", "splice", "random"]), label="damage")
    if how == "random":
        return data.draw(st.binary(max_size=400), label="random bytes")
    at = data.draw(st.integers(0, len(raw)), label="at")
    if how == "cut":
        return raw[:at]
    return raw[:at] + data.draw(st.binary(min_size=1, max_size=40), label="splice") + raw[at:]
