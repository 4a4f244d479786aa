"""What the three tools share: how they get the library, their annotations, how a result is returned."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from storage.times import utc
from tools.errors import guarded

if TYPE_CHECKING:
    from storage.library import Library

T = TypeVar("T")

LibraryProvider = Callable[[], Awaitable["Library"]]
"""Awaits the warm-up and returns the open library (or raises `ToolError` if it could not open)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)


def window(after: datetime | None, before: datetime | None) -> tuple[datetime | None, datetime | None]:
    """The (after, before) pair in UTC, refused when it is empty by construction."""
    after, before = utc(after), utc(before)
    if after is not None and before is not None and after >= before:
        raise ToolError("`after` must be earlier than `before`; the window as given contains nothing.")
    return after, before


def blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


async def run_tool(tool: str, work: Callable[..., T], *args: object, **kwargs: object) -> T:
    """Run a blocking tool body on a worker thread, with the layered error handling."""
    return await anyio.to_thread.run_sync(functools.partial(guarded, tool, functools.partial(work, *args, **kwargs)))


def tool_result(output: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=output.model_dump(mode="json"),
    )
