"""Tool output inside chats (command results, "Todos have been modified successfully", "Model set context
updated.") is found, but never makes a chat strong and ranks below what the user and the assistant wrote."""

from __future__ import annotations

from datetime import timedelta

import pytest

from importers._common import summarise_tool_call, summarise_tool_result
from storage.library import Library
from storage.models import Conversation, Message, Role
from tests.tools.helpers import BASE, block_uris, call, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

TODOS = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress."


def conversation(cid: str, source: str, turns: list[tuple[Role, str]], hours: int) -> Conversation:
    updated = BASE - timedelta(hours=hours)
    return Conversation(
        id=cid,
        source=source,
        title=turns[0][1][:50],
        created_at=updated - timedelta(hours=1),
        updated_at=updated,
        messages=[Message(id=f"{cid}-m{i}", index=i, role=role, text=text) for i, (role, text) in enumerate(turns)],
    )


CODING = conversation(  # as the Claude Code importer writes a session: tool calls and their results
    "claude-code:session-1",
    "claude-code",
    [
        ("user", "Split the invoice exporter into smaller functions"),
        ("assistant", "I'll plan the steps first. " + summarise_tool_call("TodoWrite", {"todos": [{"content": "x"}]})),
        ("tool", summarise_tool_result(TODOS)),
        ("assistant", "Done: the exporter is three functions now, each with a test."),
    ],
    hours=1,
)
MEMORY = conversation(  # as the ChatGPT importer writes the memory tool's answer
    "chatgpt:memory",
    "chatgpt",
    [
        ("user", "I'm vegetarian, keep that in mind for recipes"),
        ("tool", "[tool bio] Model set context updated."),
        ("assistant", "Noted: vegetarian recipes from now on."),
    ],
    hours=2,
)
ASKED = conversation(  # the same words, written by the user
    "claude:todo-app",
    "claude",
    [
        ("user", "My todo app shows 'Todos have been modified successfully' but the list never changes. Why?"),
        ("assistant", "The success message comes before the write is saved: check the save call's result."),
    ],
    hours=30,
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library_with(tmp_path_factory.mktemp("store"), [CODING, MEMORY, ASKED])


async def test_tool_output_is_found_but_ranks_below_what_the_user_wrote_and_is_never_strong(library: Library) -> None:
    result = await call(server_for(library), "conversation_search", {"query": "Todos have been modified successfully"})
    data = result.structured_content
    assert data is not None
    strengths = {hit["uri"]: hit["strength"] for hit in data["chats"]}
    assert block_uris(text_of(result))[:2] == ["claude:todo-app", "claude-code:session-1"]
    assert strengths == {"claude:todo-app": "strong", "claude-code:session-1": "weak", "chatgpt:memory": "weak"}
    coding = next(hit for hit in data["chats"] if hit["uri"] == "claude-code:session-1")
    assert coding["evidence"]["why"].endswith("modified, successfully only in tool output")
    assert "modified, successfully only in tool output" in text_of(result)


async def test_a_search_that_only_tool_output_answers_has_no_strong_chat(library: Library) -> None:
    result = await call(server_for(library), "conversation_search", {"query": "Model set context updated"})
    data = result.structured_content
    assert data is not None
    memory = next(hit for hit in data["chats"] if hit["uri"] == "chatgpt:memory")  # tool output stays searchable
    assert memory["evidence"]["why"] == "found only in tool output (Model, set, context, updated)"
    assert all(hit["strength"] == "weak" for hit in data["chats"])
    assert text_of(result).startswith("No strong match for 'Model set context updated'")
    assert data["matching_chats"] == 0
