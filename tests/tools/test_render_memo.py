"""The size budget renders each message's lines once a search; what it renders stays the same."""

from __future__ import annotations

import pytest

from bench.corpus.synthetic import CorpusWriter, queries
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tools import conversation_search
from tools.budget import focus_pattern
from tools.outputs import SearchOutput
from tools.render import LineMemo, chat_block
from tools.search_budget import LEVELS, block, fit_search, fitted


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    library = Library.open(tmp_path_factory.mktemp("memo") / "store", embedder=HashEmbedder(64))
    library.import_conversations(CorpusWriter(400, seed=5))
    return library


def test_every_level_renders_the_same_with_one_memo_for_all_of_them_as_without(library: Library) -> None:
    rendered = 0
    for i, query in enumerate(queries(seed=6, count=10)):
        focus = focus_pattern(query)
        memo: LineMemo = {}
        for hit in library.search(query, max_results=1 + i % 10).chats:
            for level in LEVELS + LEVELS[::-1]:  # each level twice: the second time from the memo
                variant = fitted(hit, level, focus)
                assert block(variant, memo) == block(variant)
                rendered += 1
        assert memo
    assert rendered > 100


def test_a_new_message_object_under_a_remembered_id_is_rendered_afresh(library: Library) -> None:
    hit = library.search("backup", max_results=1).chats[0]
    message = hit.matches[0].messages[0]
    memo: LineMemo = {id(message): (message.model_copy(), False, ["#1 user: not this message"])}
    assert chat_block(hit, [hit.matches[0].messages], memo) == chat_block(hit, [hit.matches[0].messages])


def test_the_tool_answers_the_same_whether_or_not_its_blocks_share_a_memo(library: Library) -> None:
    def without_memo(output: SearchOutput, memo: LineMemo | None = None) -> str:
        return conversation_search.render(output)

    for i, query in enumerate(queries(seed=7, count=12)):
        for budget in (600, 3000, 12_000):
            output, text = conversation_search.search(library, query, max_results=1 + i % 10, budget=budget)
            found = library.search(query, max_results=1 + i % 10)
            theirs = fit_search(found, budget, without_memo, output.today, output.newest_chat_at)
            assert (output, text) == theirs, (query, budget)
