"""Keyword coverage: the fast path for ASCII text finds exactly the words the general expression finds."""

from __future__ import annotations

import dataclasses
import random
import re
import sys

from storage.evidence import _FOLDS_BEYOND_LOWER, TermWeights
from storage.query.analysis import analyse

TEXTS = [
    "The proxy was set up behind nginx; proxies rotate weekly.",
    "my_proxy_config and PROXY_URL both point at reverse-proxying hosts",
    "Proxy. proxy, PrOxY! xproxy aproxy proxy2 2proxy proxy_",
    "deploying the deployment: deployed by deployer, redeploy later",
    "nginx",
    "",
    "__init__ __proxy__ _nginx_ nginx__conf",
    "Café proxy naïve déploiement",  # not ASCII: the general expression
    "\u017ftate (a long s) and the Kelvin sign \u212a in \u212aelvin",  # IGNORECASE folds these; lower() not
    "payment-service TypeError ERR_CONN_RESET payment_service",
    "deploy" * 40 + " deploy",  # a word past the index's 40-byte limit, and a normal one
    "ÉPROXY Éproxy é-proxy PROXYÉ proxié naïve—proxy «nginx» ΠΡΟΞΥ прокси 代理proxy proxy代理",
    "İstanbul ınginx PROXYİ ıproxy deplȯy ̇proxy ﬁproxy ǅproxy ßproxy",  # folds, marks, ligatures
]


def reference(weights: TermWeights) -> TermWeights:
    """The same weights with the general (look-behind, any case) expression only."""
    return dataclasses.replace(weights, ascii_starts=None)


def found_words(weights: TermWeights, text: str) -> list[str]:
    """The words of `text` that `present` stems: those that start with one of the starts (any case)."""
    assert weights.candidates is not None
    lowered = weights._lowered_words(text)
    return weights.candidates.findall(text) if lowered is None else sorted(lowered)


def test_coverage_on_ascii_text_equals_the_general_expressions_word_for_word() -> None:
    queries = ["proxy nginx", "deploy", "payment-service TypeError", "state kelvin", "err conn reset", "init"]
    rng = random.Random(4)
    words = " ".join(TEXTS).split()
    generated = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(300)]
    for query in queries:
        weights = TermWeights.of(analyse(query), 1000, {})
        assert weights.ascii_starts is not None
        general = reference(weights)
        for text in TEXTS + generated:
            # the fast path gives the distinct words lower-cased; coverage lower-cases them anyway
            ours = {w.lower() for w in found_words(weights, text)}
            assert ours == {w.lower() for w in found_words(general, text)}, (query, text)
            assert weights.coverage(text) == general.coverage(text), (query, text)


def test_the_letters_lower_case_does_not_fold_like_ignorecase_are_exactly_the_listed_ones() -> None:
    # The fast path lower-cases text that is not ASCII unless it holds one of `_FOLDS_BEYOND_LOWER`: for
    # every other code point, IGNORECASE matches an ASCII letter or digit only where lower() gives it,
    # lower() keeps one character, and a character is alphanumeric before lower() exactly when after.
    one = re.compile(r"[a-z0-9]", re.IGNORECASE)
    odd = []
    for point in range(128, sys.maxunicode + 1):
        char = chr(point)
        low = char.lower()
        if (one.fullmatch(char) is not None) != low.isascii() or len(low) != 1 or char.isalnum() != low.isalnum():
            odd.append(char)
    assert set("\u0130\u0131\u017f") <= set(odd) <= set("\u0130\u0131\u017f\u212a")  # the Kelvin sign: to be safe
    assert all(_FOLDS_BEYOND_LOWER.fullmatch(char) for char in "\u0130\u0131\u017f\u212a")


def test_a_match_inside_a_word_does_not_count_but_one_after_an_underscore_does() -> None:
    weights = TermWeights.of(analyse("proxy"), 1000, {})
    assert found_words(weights, "xproxy aproxy") == []
    assert found_words(weights, "my_proxy") == ["proxy"]
    assert weights.coverage("reverse proxies") == 1.0
    assert weights.coverage("xproxies") == 0.0


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
