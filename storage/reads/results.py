"""What the search engine hands to the tools: chats in rank order, each with its matches.

These models are also the tools' structured output, so their field descriptions are written for the
model that reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

from storage.evidence import Meaning, Strength
from storage.models import Action, Role

SearchMode = Literal["hybrid", "keyword", "vector"]


class ShownMessage(BaseModel):
    """A message shown around a match (or on a page of a chat)."""

    id: str
    index: int = Field(description="Position in the conversation, from 0.")
    number: int = Field(description="Position from 1, as the text shows it; read_chat(around=...) accepts it.")
    role: Role
    text: str
    created_at: datetime | None = None
    matched: bool = Field(default=False, description="True when this message itself matched the query.")
    truncated: bool = Field(default=False, description="True when the text was shortened to fit.")


class Match(BaseModel):
    """One place in a chat that matched, with the messages shown around it."""

    message_ids: list[str] = Field(
        description="Ids of the messages that matched (holding the query's words or related in meaning), best first."
    )
    first_index: int = Field(description="Index of the first message shown.")
    last_index: int = Field(description="Index of the last message shown.")
    messages: list[ShownMessage]


class Evidence(BaseModel):
    """Why a search found a chat, in the query's own words: what the model can check in the text."""

    matched: list[str] = Field(description="Query words the chat's user and assistant messages hold, rarest first.")
    missing: list[str] = Field(description="Query words the chat lacks, rarest first.")
    phrases: list[str] = Field(default_factory=list, description="Consecutive query words found together.")
    meaning: Meaning | None = Field(
        default=None, description="How close the chat's best message is in meaning: close, related or loose."
    )
    why: str = Field(description="Why the chat is strong or weak, in one line.")
    newer: str | None = Field(
        default=None,
        description="A newer chat on the same question, shown before this one (its title and date): where the "
        "two disagree, the newer one holds the latest word.",
    )


class Touched(BaseModel):
    """A file the chat's tool calls touched, or a command they ran."""

    action: Action = Field(description="edited, created, read (a file) or ran (a command).")
    target: str = Field(description="The file's path, or the command line.")
    times: int = Field(description="How many of the chat's messages did this.")


# The touches a result carries for a chat, of each kind (files edited, files read, commands run): edits
# first; the header shows fewer (`tools.render`).
MAX_TOUCHED = {"edited": 10, "read": 5, "ran": 5}


def touched_groups(touched: Sequence[Touched]) -> dict[str, list[str]]:
    """Files edited (or created), files read, commands run, each target once, in the order given; a
    file edited is not counted again as read."""
    groups: dict[str, list[str]] = {"edited": [], "read": [], "ran": []}
    edited = {t.target for t in touched if t.action in {"edited", "created"}}
    for touch in touched:
        group = "edited" if touch.action in {"edited", "created"} else touch.action
        if (group != "read" or touch.target not in edited) and touch.target not in groups[group]:
            groups[group].append(touch.target)
    return groups


class ChatHit(BaseModel):
    """A conversation in a result."""

    uri: str = Field(description="Stable id of the chat; pass it to read_chat to read more of it.")
    title: str
    url: str | None = Field(default=None, description="Link back to the original, when the source has one.")
    source: str
    project: str | None = None
    created_at: datetime
    updated_at: datetime
    first_message_at: datetime | None = Field(default=None, description="Time of the chat's first message.")
    last_message_at: datetime | None = Field(default=None, description="Time of the chat's last message.")
    message_count: int
    strength: Strength | None = Field(
        default=None,
        description="Search only. strong: the chat holds the query's distinctive words or closely matches its "
        "meaning; weak: only common words or a loose topic in common, possibly unrelated.",
    )
    evidence: Evidence | None = Field(default=None, description="Search only: what the strength rests on.")
    matches: list[Match] = Field(default_factory=list, description="Matches in rank order (search only).")
    touched: list[Touched] = Field(
        default_factory=list,
        description=f"Files its tool calls edited, created or read and commands they ran, edits first (at most "
        f"{sum(MAX_TOUCHED.values())}).",
    )
    # The project as a result's text names it (not part of the structured result, which keeps the path).
    _project_name: str | None = PrivateAttr(default=None)
    _touched_totals: dict[str, int] | None = PrivateAttr(default=None)

    @property
    def shown_project(self) -> str | None:
        """The project as text shows it: the folder's name when no other project has it (`name_projects`)."""
        return self._project_name or self.project

    @property
    def touched_totals(self) -> dict[str, int] | None:
        """How many files it edited and read and commands it ran in all (`touched_groups`), when `touched`
        lists fewer (`listing.add_touched`)."""
        return self._touched_totals


class OtherChat(BaseModel):
    """A strong chat the result had no room for: read it with read_chat(uri, around=number)."""

    uri: str
    title: str
    number: int = Field(description="The number of its best matching message, for read_chat(around=...).")


class SearchResult(BaseModel):
    query: str
    mode: SearchMode = Field(description="Which retrieval legs answered: hybrid, keyword-only or vector-only.")
    chats: list[ChatHit] = Field(description="Strong matches first, then weak ones; each group in rank order.")
    matching_chats: int = Field(
        default=0, description="How many chats match with real evidence (strong ones), shown or not."
    )
    others: list[OtherChat] = Field(
        default_factory=list, description="Strong chats beyond those shown, best first (at most five)."
    )
    notes: list[str] = Field(default_factory=list)


class WrittenWithin(BaseModel):
    """A chat last updated after a time window that holds messages written in it: named beside the
    page, with the call that reads them (the tools word the call for their reader)."""

    uri: str
    title: str
    updated: str  # the day it was last updated
    numbers: list[int]  # its messages written in the window, by number from 1


class RecentResult(BaseModel):
    chats: list[ChatHit]
    sort_order: Literal["asc", "desc"]
    next_before: datetime | None = Field(
        default=None, description="Pass as `before` (with sort_order='desc') for the next, older page."
    )
    next_after: datetime | None = Field(
        default=None, description="Pass as `after` (with sort_order='asc') for the next, newer page."
    )
    notes: list[str] = Field(default_factory=list)
    # Chats with messages inside the window but last updated after it (not part of the structured result).
    _within: list[WrittenWithin] = PrivateAttr(default_factory=list)

    @property
    def within(self) -> list[WrittenWithin]:
        return self._within


class ChatPage(BaseModel):
    chat: ChatHit
    messages: list[ShownMessage]
    offset: int = Field(description="Index of the first message on this page.")
    next_offset: int | None = Field(default=None, description="Offset of the next page; null at the end.")
