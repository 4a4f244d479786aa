"""Keyword coverage: the fast path for ASCII text finds exactly the words the general expression finds."""

from __future__ import annotations

import dataclasses
import random

from storage.evidence import TermWeights
from storage.query import analyse

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
]


def reference(weights: TermWeights) -> TermWeights:
    """The same weights with the general (look-behind, any case) expression only."""
    return dataclasses.replace(weights, ascii_starts=None)


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
            # the fast path gives the words lower-cased; coverage lower-cases them anyway
            ours = sorted(w.lower() for w in weights._words(text))
            assert ours == sorted(w.lower() for w in general._words(text)), (query, text)
            assert weights.coverage(text) == general.coverage(text), (query, text)


def test_a_match_inside_a_word_does_not_count_but_one_after_an_underscore_does() -> None:
    weights = TermWeights.of(analyse("proxy"), 1000, {})
    assert weights._words("xproxy aproxy") == []
    assert weights._words("my_proxy") == ["proxy"]
    assert weights.coverage("reverse proxies") == 1.0
    assert weights.coverage("xproxies") == 0.0
