"""Speed work must not change a byte of what the model reads: the search output's budget sharing,
rendered the quick way, is what rendering every level would give."""

from __future__ import annotations

import pytest

from bench.corpus.synthetic import CorpusWriter, queries
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.reads.results import ChatHit, ShownMessage
from tools.budget import Focus, clip_message, focus_pattern, hit_focus
from tools.render import LOOKALIKE_LT, _swap_brackets, neutralise
from tools.search_budget import LEVELS, SEPARATOR, block, fitted, share


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    library = Library.open(tmp_path_factory.mktemp("identity") / "store", embedder=HashEmbedder(64))
    library.import_conversations(CorpusWriter(700, seed=3))
    return library


def every_level(hits: list[ChatHit], usable: int, focus: Focus | None) -> tuple[list[ChatHit], int]:
    """The sharing rule rendered the slow way: every level of every chat first, then the choice."""
    levels = [[fitted(hit, level, focus) for level in LEVELS] for hit in hits]
    sizes = [[len(block(variant)) + SEPARATOR for variant in variants] for variants in levels]
    chosen: dict[int, ChatHit] = {}
    remaining = usable
    order = sorted(range(len(hits)), key=lambda i: sizes[i][0])
    for position, i in enumerate(order):
        allowance = remaining // (len(order) - position)
        pick = next((j for j, size in enumerate(sizes[i]) if size <= allowance), len(LEVELS) - 1)
        chosen[i] = levels[i][pick]
        remaining -= sizes[i][pick]
    return [chosen[i] for i in range(len(hits))], usable - remaining


def test_rendering_only_the_levels_needed_shares_the_budget_as_rendering_them_all(library: Library) -> None:
    for i, query in enumerate(queries(seed=8, count=12)):
        hits = library.search(query, max_results=1 + i % 10).chats
        focus = focus_pattern(query)
        for usable in (300, 1500, 4000, 11_400, 40_000):
            assert share(hits, usable, focus) == every_level(hits, usable, focus), (query, usable)


def copying_everything(hit: ChatHit, level: tuple[int, int], focus: Focus | None) -> ChatHit:
    """A level fitted the plain way: every match copied, clipped or not (answers keep the whole cap)."""
    keep, cap = level

    def clipped(m: ShownMessage) -> ShownMessage:
        return clip_message(m, cap if m.matched or m.role == "assistant" else cap // 2, hit_focus(hit, focus))

    matches = [
        match.model_copy(update={"messages": [clipped(m) for m in match.messages]}) for match in hit.matches[:keep]
    ]
    return hit.model_copy(update={"matches": matches})


def test_fitting_a_level_copies_only_what_it_clips_and_renders_the_same(library: Library) -> None:
    for i, query in enumerate(queries(seed=9, count=12)):
        focus = focus_pattern(query)
        for hit in library.search(query, max_results=1 + i % 10).chats:
            for level in LEVELS:
                ours, plain = fitted(hit, level, focus), copying_everything(hit, level, focus)
                assert ours == plain
                assert block(ours) == block(plain)


def test_ascii_text_without_a_bracket_skips_the_tag_check_and_reads_the_same() -> None:
    texts = ["plain text", "a < b", "<chat uri='x'>", "< / c h a t >", "x\u200b<chat", "<\tChAt", "", "ok>"]
    for text in texts:
        assert neutralise(text) == _swap_brackets(text)
    assert neutralise("<CHAT>").startswith(LOOKALIKE_LT)
