"""The grammar's reading of a query (`storage.query.grammar`), and what the page marks of it."""

from __future__ import annotations

import pytest

from server.ui.parts import query_terms
from storage.query.analysis import analyse
from storage.query.grammar import ParsedQuery, holds_phrase, parse


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kubernetes -docker", ParsedQuery("kubernetes", "kubernetes", (), ("docker",))),
        ('"connection refused" nginx', ParsedQuery("connection refused nginx", "nginx", ("connection refused",))),
        ("“curly quotes” too", ParsedQuery("curly quotes too", "too", ("curly quotes",))),
        ('k8s -"docker compose"', ParsedQuery("k8s", "k8s", (), ("docker compose",))),
        ('"keep -this" x', ParsedQuery("keep -this x", "x", ("keep -this",))),
        ("e-mail --force -1 x - y", ParsedQuery("e-mail --force -1 x - y", "e-mail --force -1 x - y")),
        ('a "" "..." b', ParsedQuery("a b", "a b")),
        ("fix it -now.", ParsedQuery("fix it", "fix it", (), ("now",))),
        ('"Same" "same" -X -x', ParsedQuery("Same same", "", ("Same",), ("X",))),
    ],
)
def test_phrases_and_exclusions_are_read_out_of_the_query(query: str, expected: ParsedQuery) -> None:
    assert parse(query) == expected


def test_an_unclosed_quote_is_words_with_a_note() -> None:
    parsed = parse('"connection refused nginx')
    assert (parsed.text, parsed.phrases) == ("connection refused nginx", ())
    assert "was not closed" in parsed.notes[0]


def test_only_exclusions_is_told_apart() -> None:
    assert parse("-docker -nginx").only_excluded
    assert analyse("-docker -nginx").is_empty
    assert not parse("-docker nginx").only_excluded


def test_a_phrase_is_its_words_in_order_punctuation_and_case_aside() -> None:
    assert holds_phrase("The Connection, refused!", ("connection", "refused"))
    assert not holds_phrase("connections refused", ("connection", "refused"))
    assert not holds_phrase("refused connection", ("connection", "refused"))


def test_the_analysed_query_keeps_the_phrase_for_the_index_and_its_words_for_evidence() -> None:
    analysed = analyse('"state lock" terraform -dynamodb')
    assert analysed.required == (("state", "lock"),)
    assert analysed.required_words == (("state", "lock"),)
    assert analysed.phrase_terms == frozenset({"state", "lock"})
    assert analysed.excluded == (("dynamodb",),)
    assert "dynamodb" not in analysed.text
    assert ("state", "lock") in analysed.phrases


def test_the_page_marks_a_phrase_whole_and_never_an_excluded_word() -> None:
    terms = query_terms('"connection refused" nginx -docker')
    assert terms is not None
    assert terms.split("docker nginx: connection  refused; connection")[1::2] == ["nginx", "connection  refused"]
