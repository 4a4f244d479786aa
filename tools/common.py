"""What the three tools share: how they get the library, their annotations, how a result is returned."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from storage.safe_text import clean_all
from tools.errors import guarded

if TYPE_CHECKING:
    from storage.library import Library

T = TypeVar("T")

LibraryProvider = Callable[[], Awaitable["Library"]]
"""Awaits the warm-up and returns the open library (or raises `ToolError` if it could not open)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)


async def run_tool(tool: str, work: Callable[..., T], *args: object, **kwargs: object) -> T:
    """Run a blocking tool body on a worker thread, with the layered error handling."""
    return await anyio.to_thread.run_sync(functools.partial(guarded, tool, functools.partial(work, *args, **kwargs)))


def tool_result(output: BaseModel, text: str) -> CallToolResult:
    """The text (rendered safe by `tools.render`) and the structured content, whose strings (chat text,
    titles, the query) are cleaned the same way: a model reads either."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=clean_all(output.model_dump(mode="json")),
    )
