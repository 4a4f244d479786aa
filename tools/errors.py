"""Errors in layers: what the model may read, and what only the server log sees.

Expected failures become a `ToolError` whose text says what to do next; anything else is logged with
its traceback and reaches the model as one short line, never as exception text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from storage.errors import AmbiguousUri, NotFound, PastchatsError, PastTheEnd
from tools.voice import call, said, tool

if TYPE_CHECKING:
    from mcp.server.mcpserver.exceptions import ToolError

    from storage.reads.listing import RecentSource

logger = logging.getLogger("pastchats.tools")

T = TypeVar("T")


def _tool_error_class() -> type[ToolError]:
    # Imported when an error is raised, not with this module: `pastchats recent` runs a tool body
    # without the MCP SDK (~0.75 s of start-up), and only its error paths need the class.
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError


def tool_error_text(exc: PastchatsError) -> str:
    """What the model reads for an expected failure (the stdio front writes it without the SDK); a
    person at the CLI reads the same, with commands where the model is offered calls."""
    if isinstance(exc, AmbiguousUri):
        return f"{exc}. Pass more of the uri, or one of them whole, e.g. {call('read_chat', uri=exc.candidates[0])}."
    if isinstance(exc, NotFound):
        return f"{exc}. Use a uri exactly as {tool('conversation_search')} or {tool('recent_chats')} gives it."
    if isinstance(exc, PastTheEnd):
        return f"{exc} Its last page: {call('read_chat', uri=exc.uri, offset=exc.last_offset, limit=exc.limit)}."
    return str(exc)


def empty_store() -> str:
    return (
        "No chats have been imported yet, so there is nothing to search. "
        + said(model="Tell the user to import their chat history first: ", person="Import your chat history first: ")
        + "`pastchats import <file>` (a Claude or ChatGPT export, or a Claude Code, Codex, Gemini, Aider or "
        "Cursor history), `pastchats sync` (the coding agents' logs on this machine), or `pastchats import "
        "--sample` to try it out."
    )


def tool_error(exc: PastchatsError) -> ToolError:
    """The one translation of an expected failure into what the model reads."""
    return _tool_error_class()(tool_error_text(exc))


def guarded(tool: str, work: Callable[[], T]) -> T:
    """Run a tool body, turning expected failures into actionable `ToolError`s and hiding crashes."""
    try:
        return work()
    except PastchatsError as exc:
        raise tool_error(exc) from None
    except Exception as exc:
        ToolError = _tool_error_class()
        if isinstance(exc, ToolError):
            raise
        logger.exception("%s failed", tool)
        raise ToolError(
            "Internal error in pastchats; "
            + said(
                model="details are in the server log. Try again, or tell the user.",
                person="run the command again with -vv to see the details.",
            )
        ) from None


def require_chats(library: RecentSource) -> None:
    """Raise the empty-store error when nothing has been imported (checked only when a result is empty)."""
    if library.is_empty():
        raise _tool_error_class()(empty_store())
