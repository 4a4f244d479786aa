"""Coverage's word starts are found inside the regular expression exactly as they were filtered after it."""

from __future__ import annotations

import re

from storage.evidence import TermWeights
from storage.query import analyse


def filtered_after(weights: TermWeights, text: str) -> set[str]:
    """The words the code before found: every match of the starts, kept when no letter or digit is before it."""
    starts = sorted({term[: max(2, len(term) - 1)] for term in weights.weights}, key=len, reverse=True)
    pattern = re.compile(r"(?:" + "|".join(map(re.escape, starts)) + r")[^\W_]*")
    lowered = text.lower()
    return {m.group() for m in pattern.finditer(lowered) if m.start() == 0 or not lowered[m.start() - 1].isalnum()}


def test_word_starts_are_found_at_the_text_start_after_newlines_underscores_and_digits_only() -> None:
    texts = [
        "proxy",
        "xproxy\nproxy\tproxies",
        "2proxy proxy2 _proxy proxy_ a-proxy",
        "nnginx ngnginx nginx1 1nginx",
        "p pr pro prox \n\nPROXY",
        "ab abc xab 9ab ab_",
    ]
    for query in ("proxy nginx", "ab", "a proxy", "deploy x"):
        weights = TermWeights.of(analyse(query), 1000, {})
        if weights.ascii_starts is None:
            continue
        for text in texts:
            assert weights._lowered_words(text) == filtered_after(weights, text), (query, text)
