"""The keyword leg in two steps (every Tantivy search, then every document read) finds what one step did,
and coverage's word starts are found inside the regular expression exactly as they were filtered after it."""

from __future__ import annotations

import re

import pytest

from bench.perf_corpus import CorpusWriter, queries
from storage.embedder import HashEmbedder
from storage.evidence import TermWeights
from storage.filters import Filters
from storage.library import Library
from storage.query import analyse
from storage.units import MESSAGE, WINDOW


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    library = Library.open(tmp_path_factory.mktemp("two-steps") / "store", embedder=HashEmbedder(64))
    library.import_conversations(CorpusWriter(400, seed=9))
    return library


def test_finding_then_reading_gives_the_hits_one_search_gives_for_every_kind(library: Library) -> None:
    keywords = library.keywords
    found = 0
    for query in [*queries(seed=3, count=20), "payment-service TypeError", "useEffect zfs"]:
        analysed = analyse(query)
        reader = keywords.reader()
        for kind, limit in ((MESSAGE, 200), (WINDOW, 100)):
            hits = keywords.search(analysed, limit, Filters(), kind)
            assert keywords.read(keywords.find(analysed, limit, Filters(), kind, searcher=reader), reader) == hits
            found += len(hits)
        phrases = keywords.search_phrases(analysed, 200, Filters())
        assert keywords.read(keywords.find_phrases(analysed, 200, Filters(), reader), reader) == phrases
    assert found > 1000


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
