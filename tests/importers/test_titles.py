"""A chat without a title is named by its first prompt, cut after a whole word, never inside one; the
whole prompt stays the chat's first message."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from importers._common import Turn, build_conversation, shorten
from importers.base import ImportReport

PROMPT = (
    "I need a helper that maps every customer id to the newest order and then writes it into the paper "
    "I am preparing for the quarterly review"
)


def test_an_untitled_chat_is_named_by_its_first_prompt_cut_after_a_whole_word() -> None:
    chat = build_conversation(
        id="c-1",
        source="codex",
        turns=[Turn("1", "user", PROMPT, None), Turn("2", "assistant", "Sure.", None)],
        report=ImportReport("chats.jsonl"),
        fallback_time=datetime(2025, 1, 1, tzinfo=UTC),
    )
    assert chat.title == "I need a helper that maps every customer id to the newest order and then writes…"
    assert chat.messages[0].text == PROMPT  # the whole first prompt, as `pastchats read` shows it


def test_a_long_single_word_is_cut_at_a_joint_of_it() -> None:
    url = "https://example.com/some/long/path/that-goes-on-and-on/and/on/and/on/and/on/and/on/index.html"
    assert shorten(url, 80) == "https://example.com/some/long/path/that-goes-on-and-on/and/on/and/on/and/on/…"


words = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0123456789", min_size=1, max_size=15), min_size=1)


@given(words, st.integers(min_value=10, max_value=120))
def test_a_cut_never_falls_inside_a_word(parts: list[str], limit: int) -> None:
    text = " ".join(parts)
    cut = shorten(text, limit)
    assert len(cut) <= limit
    if cut == text:
        return
    assert cut.endswith("…")
    kept = cut.removesuffix("…").split()
    if len(parts[0]) < limit:  # a first word longer than the limit alone is cut inside
        assert kept == parts[: len(kept)]
