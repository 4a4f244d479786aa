"""The query grammar through a real MCP client: "exact phrase" and -word behave as written, in the
results, their evidence and the messages marked matched; an unclosed quote and a query of only
exclusions are explained. And read_chat's shortened uris."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from storage.library import Library
from storage.query.grammar import holds_phrase, parse, plain_words
from tests.tools.helpers import block_uris, call, chat, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

CHATS = [
    chat(
        "ops:refused-nginx",
        [
            "nginx says connection refused on port 8080",
            "The upstream is down: connection refused means nothing listens.",
        ],
        title="Upstream errors",
    ),
    chat(
        "ops:refused-docker",
        ["docker compose: connection refused between containers", "Use the service name, not localhost."],
        title="Compose networking",
    ),
    chat(
        "ops:words-apart",
        ["the connection was fine but the request was refused by the proxy", "Check the proxy's allow list."],
        title="Proxy allow list",
    ),
    chat(
        "ops:docker-title",
        ["why is the connection refused when the port is open", "A firewall drops it before the socket."],
        title="Docker firewall",
    ),
    chat("ops:stemmed", ["connections refused all night", "Raise the backlog."], title="Backlog"),
    chat("kitchen:bread", ["my sourdough starter smells of acetone", "Feed it twice a day."], title="Sourdough"),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library_with(tmp_path_factory.mktemp("store"), CHATS)


async def search(library: Library, query: str, **more: object) -> tuple[str, dict[str, object]]:
    result = await call(server_for(library), "conversation_search", {"query": query, "max_results": 10, **more})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return text_of(result), result.structured_content


async def test_a_phrase_finds_only_what_holds_its_words_in_order(library: Library) -> None:
    _text, data = await search(library, '"connection refused"')
    uris = {chat["uri"] for chat in data["chats"]}  # type: ignore[attr-defined]
    # "connections refused" stems alike, and "connection ... refused" holds the words apart: neither is the phrase
    assert uris == {"ops:refused-nginx", "ops:refused-docker", "ops:docker-title"}
    for hit in data["chats"]:  # type: ignore[attr-defined]
        assert hit["evidence"]["matched"][0] == '"connection refused"'
        # the phrase's words count only as the phrase: never one by one
        assert "connection" not in hit["evidence"]["matched"]
        assert "refused" not in hit["evidence"]["matched"]
        assert hit["evidence"]["missing"] == []


async def test_a_phrase_ranks_the_chats_holding_it_with_the_other_words(library: Library) -> None:
    _, data = await search(library, '"connection refused" nginx')
    first = data["chats"][0]  # type: ignore[index]
    assert first["uri"] == "ops:refused-nginx"
    assert first["evidence"]["matched"] == ['"connection refused"', "nginx"]


async def test_an_exclusion_leaves_out_every_chat_holding_the_word(library: Library) -> None:
    text, data = await search(library, "connection refused -docker")
    uris = [chat["uri"] for chat in data["chats"]]  # type: ignore[attr-defined]
    assert uris
    assert "ops:refused-docker" not in uris
    assert "ops:docker-title" not in uris  # the word in its title is enough
    assert "docker" not in text.casefold()
    for hit in data["chats"]:  # type: ignore[attr-defined]
        assert "docker" not in " ".join(hit["evidence"]["matched"] + hit["evidence"]["missing"]).casefold()


async def test_an_excluded_phrase_and_a_phrase_together(library: Library) -> None:
    _, data = await search(library, '"connection refused" -"docker compose"')
    uris = {chat["uri"] for chat in data["chats"]}  # type: ignore[attr-defined]
    assert uris == {"ops:refused-nginx", "ops:docker-title"}


async def test_a_message_is_marked_matched_by_the_phrase_not_by_one_of_its_words(library: Library) -> None:
    text, _ = await search(library, '"connection refused" nginx')
    lines = [line for line in text.splitlines() if line.startswith("#")]
    for line in lines:
        if "(matched)" in line:
            words = plain_words(line)
            assert holds_phrase(line, ("connection", "refused")) or "nginx" in words


async def test_an_unclosed_quote_searches_its_words_and_says_so(library: Library) -> None:
    text, data = await search(library, '"connection refused')
    assert "was not closed" in text
    assert any("was not closed" in note for note in data["notes"])  # type: ignore[attr-defined]
    assert {"ops:words-apart", "ops:stemmed"} <= {chat["uri"] for chat in data["chats"]}  # type: ignore[attr-defined]


async def test_a_query_of_only_exclusions_is_an_error_naming_a_call(library: Library) -> None:
    result = await call(server_for(library), "conversation_search", {"query": "-docker -nginx"})
    assert result.is_error
    assert "only says what to leave out" in text_of(result)
    assert "conversation_search(query='deploy -docker')" in text_of(result)


async def test_a_minus_inside_a_word_or_before_a_digit_is_searched_as_written(library: Library) -> None:
    assert parse("e-mail --force -1 x").excluded == ()
    assert parse('"keep -this" -drop').phrases == ("keep -this",)
    assert parse('"keep -this" -drop').excluded == ("drop",)


async def test_the_description_teaches_the_grammar(library: Library) -> None:
    async with Client(server_for(library)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    description = tools["conversation_search"].description or ""
    assert '"exact phrase"' in description
    assert "-word" in description


# ---- read_chat: a shortened uri ----------------------------------------------------------------


async def test_read_chat_reads_the_chat_a_unique_start_of_its_uri_names(library: Library) -> None:
    result = await call(server_for(library), "read_chat", {"uri": "kitchen:br"})
    assert not result.is_error, text_of(result)
    assert block_uris(text_of(result)) == ["kitchen:bread"]
    # the part after the source's name is a start too
    result = await call(server_for(library), "read_chat", {"uri": "bre"})
    assert block_uris(text_of(result)) == ["kitchen:bread"]


async def test_an_ambiguous_start_lists_the_chats_and_the_exact_next_call(library: Library) -> None:
    result = await call(server_for(library), "read_chat", {"uri": "ops:refused"})
    assert result.is_error
    text = text_of(result)
    assert "'ops:refused-docker'" in text
    assert "'ops:refused-nginx'" in text
    assert "read_chat(uri='ops:refused-docker')" in text


async def test_a_start_nothing_has_is_the_not_found_error(library: Library) -> None:
    result = await call(server_for(library), "read_chat", {"uri": "zzz:nothing"})
    assert result.is_error
    assert re.search(r"no chat with uri 'zzz:nothing'", text_of(result))


async def test_a_session_s_uri_names_the_session_not_its_subagent_s_chat(tmp_path: Path) -> None:
    session, subagent = "claude-code:5e55e000-1111", "claude-code:5e55e000-1111:agent-a1"
    chats = [chat(session, ["plan the release", "Three steps."]), chat(subagent, ["check the changelog", "Done."])]
    library = library_with(tmp_path, chats)
    result = await call(server_for(library), "read_chat", {"uri": "claude-code:5e55"})
    assert block_uris(text_of(result)) == [session]  # its subagent's chat does not make it ambiguous
    library.delete([session])
    result = await call(server_for(library), "read_chat", {"uri": session})
    assert result.is_error  # a deleted session is not read as its subagent's chat
    assert re.search(r"no chat with uri 'claude-code:5e55e000-1111'", text_of(result))
    result = await call(server_for(library), "read_chat", {"uri": "claude-code:5e55e000-1111:agent"})
    assert block_uris(text_of(result)) == [subagent]
    library.close()
