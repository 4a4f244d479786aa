"""What the conversation_search tool answers, without MCP: shared by the server
(`tools.conversation_search`), `pastchats search`, and the stdio front, which runs a first search
before the MCP SDK is imported (start-up speed)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from storage.times import iso_z
from tools.arguments import ArgumentError, blank_to_none, window
from tools.errors import require_chats
from tools.outputs import SearchOutput
from tools.render import LineMemo, chat_block, document, quoted
from tools.search_budget import fit_search

if TYPE_CHECKING:
    from storage.library import Library

NAME = "conversation_search"
MAX_QUERY_CHARS = 1000


def _lead(output: SearchOutput) -> str | None:
    query = quoted(output.query[:200])
    if not output.chats:
        return (
            f"No past chats matched {query}. Try 2-3 other wordings: names, identifiers or technical terms "
            "the original chat would have used. For chats from a certain time, use recent_chats."
        )
    if not any(hit.strength == "strong" for hit in output.chats):
        return (
            f"No strong match for {query}: the chats below share only common words or a loose topic with it "
            "and may be unrelated. Reword with words the original chat would have used, try recent_chats if "
            "you know when it was, or ask the user."
        )
    return None


def render(output: SearchOutput, memo: LineMemo | None = None) -> str:
    blocks = [chat_block(hit, [m.messages for m in hit.matches], memo) for hit in output.chats]
    return document(blocks, output.notes, lead=_lead(output))


def _filters_note(
    library: Library, query: str, project: str | None, after: datetime | None, before: datetime | None
) -> str | None:
    """Why an empty filtered result is empty: how much the filters left out."""
    if project is None and after is None and before is None:
        return None
    unfiltered = library.search(query, max_results=1)
    if not unfiltered.chats:
        return None
    parts = (
        ([f"in project {quoted(project)}"] if project else [])
        + ([f"after {iso_z(after)}"] if after else [])
        + ([f"before {iso_z(before)}"] if before else [])
    )
    return (
        f"Nothing matched {' and '.join(parts)}, but {unfiltered.matching_chats} chat(s) match without these "
        "filters: widen the time window, or drop project."
    )


def search(
    library: Library,
    query: str,
    *,
    max_results: int = 5,
    project: str | None = None,
    after: datetime | None = None,
    before: datetime | None = None,
    budget: int = 12_000,
) -> tuple[SearchOutput, str]:
    """The tool's whole behaviour, without MCP: shared by the server and the CLI."""
    cleaned = " ".join(query.split())
    if not cleaned:
        raise ArgumentError(  # the tool layer turns it into a ToolError of these words
            "The query is empty. Pass a few words from the chat you are looking for (names, identifiers, "
            "technical terms); to list chats by time, use recent_chats."
        )
    notes: list[str] = []
    if len(cleaned) > MAX_QUERY_CHARS:
        cleaned = cleaned[:MAX_QUERY_CHARS]
        notes.append(
            f"The query was cut to its first {MAX_QUERY_CHARS} characters; "
            "a few distinctive words work better than a passage."
        )
    after, before = window(after, before)
    project = blank_to_none(project)
    result = library.search(cleaned, max_results=max_results, project=project, after=after, before=before)
    if not result.chats:
        require_chats(library)
        if note := _filters_note(library, cleaned, project, after, before):
            notes.append(note)
    result = result.model_copy(update={"notes": notes + result.notes})
    return fit_search(result, budget, render, max_results)
