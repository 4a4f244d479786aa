"""The strength rule table, case by case, and the evidence around it: title words, words held in another
form, chats on the same question newest first, a long chat's later near-duplicate matches."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storage.evidence import (
    CLOSE_MEANING,
    RELATED_MEANING,
    RULES,
    ChatEvidence,
    TermWeights,
    newest_first,
    same_question,
    spellings,
)
from storage.query.analysis import analyse
from storage.search.shown import later_kept
from storage.stores.lance_store import UnitHit

# Document frequencies in a store of 1,000 chunks: "marathon" and "lisbon" rare, "plan" and "time" common.
FREQS = {"marathon": 5, "train": 40, "plan": 200, "lisbon": 3, "hotel": 20, "book": 60, "setinterv": 1}


def weights(query: str) -> TermWeights:
    return TermWeights.of(analyse(query), 1000, FREQS)


def evidence(w: TermWeights, words: str = "", *, title: str = "", similarity: float | None = None) -> ChatEvidence:
    """A chat holding `words` together in one message, titled `title`, its best message at `similarity`."""
    chat = ChatEvidence(similarity=similarity)
    chat.add_title(w.present(title).intersection(w.weights), w)
    held = w.present(words).intersection(w.weights)
    chat.add_words(held, words)
    if held:
        chat.add_unit(held, w)
    return chat


# (query, words the chat holds, its title, its best similarity, strong?, why)
CASES = [
    ("marathon training plan", "", "", 0.5, False, "holds none of the query's words and is not close in meaning"),
    ("marathon training plan", "", "", 0.65, True, "holds none of the query's words, but is close in meaning"),
    ("marathon training plan", "marathon training plan", "", 0.45, True, "holds the query's words together"),
    ("marathon training plan", "training plan", "", 0.5, False, "lacks the query's rarest words"),
    (
        "marathon training plan",
        "training plan",
        "",
        0.62,
        True,
        "lacks the query's rarest words, but is close in meaning",
    ),
    ("marathon training plan", "", "Marathon training plan", 0.1, True, "its title holds the query's words"),
    (
        "marathon training plan",
        "marathon training plan",
        "",
        0.1,
        False,
        "holds the query's words, but is unrelated in meaning",
    ),
    ("Lisbon hotel booked", "Lisbon hotel", "", 0.3, True, "holds the query's words together"),
    ("Lisbon hotel booked", "hotel", "", 0.3, False, "lacks the query's rarest words"),
    # "timer" is in no chat: the chat holding setInterval lacks nothing that chats hold
    (
        "dashboard timer setInterval",
        "dashboard setInterval",
        "",
        0.3,
        True,
        "holds the query's identifier word for word",
    ),
    # a longer query (more than a few chosen words): part of it, and the meaning
    ("marathon training plan for the Lisbon hotel", "plan", "", 0.5, True, "related in meaning"),
    ("marathon training plan for the Lisbon hotel", "plan", "", 0.65, True, "close in meaning"),
    (
        "marathon training plan for the Lisbon hotel",
        "marathon training plan",
        "",
        0.4,
        True,
        "holds part of the query's words and is related in meaning",
    ),
    ("marathon training plan for the Lisbon hotel", "plan", "", 0.3, False, "holds only part of the query's words"),
    ("payment-service", "", "", 0.3, False, "holds none of the query's words and is not close in meaning"),
    ("what did we discuss", "", "", 0.5, False, "the query has no words to look for"),
]


@pytest.mark.parametrize(("query", "words", "title", "similarity", "strong", "why"), CASES)
def test_each_rule_of_the_table(query: str, words: str, title: str, similarity: float, strong: bool, why: str) -> None:
    w = weights(query)
    assert evidence(w, words, title=title, similarity=similarity).strength(w) == ("strong" if strong else "weak", why)


def test_every_rule_is_reached_by_a_case() -> None:
    reasons = {why for _, _, why in RULES}
    covered = {case[-1] for case in CASES}
    assert reasons == covered


def test_no_chat_is_strong_with_none_of_the_words_unless_close_in_meaning() -> None:
    w = weights("marathon training plan")
    for similarity in (None, 0.1, 0.3, RELATED_MEANING, CLOSE_MEANING - 0.01):
        assert evidence(w, "", similarity=similarity).strength(w)[0] == "weak"
    assert evidence(w, "", similarity=CLOSE_MEANING).strength(w)[0] == "strong"


def test_title_words_are_evidence_and_say_so() -> None:
    w = weights("nail polish remover")
    chat = evidence(w, "acetone smell", title="Starter smells like nail polish remover", similarity=0.15)
    verdict = chat.verdict(w)
    assert verdict.strength == "strong"
    assert verdict.matched == ("nail (in the title)", "polish (in the title)", "remover (in the title)")


def test_a_word_held_in_another_form_says_which() -> None:
    w = weights("living probes")
    found = spellings(w, ["The liveness check restarts healthy pods; probes run every 10 s."])
    assert found == {"live": "liveness"}
    chat = evidence(w, "The liveness check restarts healthy pods; probes run every 10 s.", similarity=0.5)
    assert chat.verdict(w, found).matched[:2] in (
        ("living (as liveness)", "probes"),
        ("probes", "living (as liveness)"),
    )


AT = {c: datetime(2025, month, 1, tzinfo=UTC) for c, month in (("old", 3), ("new", 9), ("other", 12), ("weak", 10))}


def test_chats_on_the_same_question_come_newest_first_at_the_best_ones_place() -> None:
    w = weights("job offer accept decline")
    chats = {
        "old": evidence(w, "job offer decline accept", similarity=0.55),
        "new": evidence(w, "job offer: I decline no more, I accept", similarity=0.5),
        "other": evidence(w, "job", similarity=0.45),
    }

    def same(a: str, b: str) -> bool:
        return same_question(chats[a], chats[b], w, strong=True)

    order, newer, joined = newest_first(["old", "other", "new"], ["old", "other", "new"], [], same, AT)
    assert order == ["new", "old", "other"]
    assert newer == {"old": "new"}
    assert not joined


def test_a_weak_chat_joins_only_a_strong_one_it_is_newer_than() -> None:
    w = weights("sourdough starter feeding ratio")
    strong = evidence(w, "sourdough starter feeding ratio", similarity=0.6)
    later = evidence(w, "starter feeding ratio", similarity=0.5)
    chats = {"old": strong, "weak": later}

    def same(a: str, b: str) -> bool:
        return same_question(chats[a], chats[b], w, strong=b == "old")

    order, newer, joined = newest_first(["old", "weak"], ["old"], ["weak"], same, AT)
    assert (order, newer, joined) == (["weak", "old"], {"old": "weak"}, {"weak"})
    earlier = {**AT, "weak": datetime(2025, 1, 1, tzinfo=UTC)}
    assert newest_first(["old", "weak"], ["old"], ["weak"], same, earlier) == (["old", "weak"], {}, set())


def test_a_weak_chat_loose_in_meaning_is_on_the_same_question_only_holding_all_the_heads_words() -> None:
    w = weights("marathon target finish time")
    plan = evidence(w, "marathon target finish time", similarity=0.5)
    assert same_question(plan, evidence(w, "marathon target finish time", similarity=0.3), w, strong=False)
    assert not same_question(plan, evidence(w, "marathon finish time", similarity=0.3), w, strong=False)


def test_a_later_match_holding_the_same_words_takes_an_earlier_ones_place() -> None:
    w = weights("Lisbon hotel booked")
    units = {
        "a": UnitHit("a", "trip", 3, 3, ("m3",), text="Shortlist of Lisbon hotels"),
        "b": UnitHit("b", "trip", 36, 36, ("m36",), text="I booked the hotel in Lisbon!"),
        "c": UnitHit("c", "trip", 12, 12, ("m12",), text="Lisbon weather in October"),
        "d": UnitHit("d", "trip", 20, 20, ("m20",), text="Which hotel for Lisbon?"),
    }
    found = [("a", 1.0), ("c", 0.9), ("d", 0.3), ("b", 0.6)]
    # "a" (lisbon, hotel) gives way to "b" (lisbon, hotel, book); "d" too, but "c" holds "lisbon" only
    # and a later "b" holds it: it gives way as well; a unit found by meaning alone is kept
    assert [cid for cid, _ in later_kept(found, units, w)] == ["b"]
    units["e"] = UnitHit("e", "trip", 40, 40, ("m40",))
    assert [cid for cid, _ in later_kept([*found, ("e", 0.2)], units, w)] == ["b", "e"]
