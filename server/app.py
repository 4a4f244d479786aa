"""The MCP server: three read-only tools over one library, opened in the background at start-up.

Opening the library (LanceDB, Tantivy, the embedding model) takes seconds; `initialize` must not wait
for it. The lifespan starts the warm-up on a thread (`server.warm_up`) and returns at once, so the
library opens while the client initializes; a tool call awaits it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from server.search_view import search_view
from server.services.embedding import BackgroundEmbedding
from server.services.opening import open_store
from server.services.sync.background import BackgroundSync
from server.settings import Settings
from server.warm_up import SERVING_GC_THRESHOLD as SERVING_GC_THRESHOLD  # where tests and bench/ look
from server.warm_up import WarmLibrary
from tools import conversation_search, read_chat, recent_chats
from tools.arguments import ArgumentError, check_arguments, explain
from tools.errors import tool_error
from tools.instructions import INSTRUCTIONS

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.server")

LibraryFactory = Callable[[Settings], "Library"]


class PastchatsServer(MCPServer[Any]):
    """MCPServer whose tool errors read as one plain line: unknown arguments are refused rather than
    dropped, a schema violation names the parameter, its rule and an example (not pydantic's dump),
    and a deliberate error keeps its own words without the SDK's "Error executing tool" prefix."""

    _schemas: dict[str, dict[str, Any]] | None = None

    async def _input_schema(self, name: str) -> dict[str, Any] | None:
        if self._schemas is None:
            self._schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        return self._schemas.get(name)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        schema = await self._input_schema(name)
        if schema is not None:
            try:
                check_arguments(name, arguments, schema)
            except ArgumentError as exc:
                raise tool_error(exc) from None
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and schema is not None:
                raise ToolError(explain(name, cause, schema)) from cause
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from cause
            raise


def build_server(settings: Settings, library_factory: LibraryFactory | None = None) -> MCPServer[Any]:
    """The MCP server with its three tools. Tests pass a factory returning a library they built."""
    factory = library_factory or (lambda s: open_store(s, "search"))
    warm = WarmLibrary(lambda: factory(settings))
    syncing = BackgroundSync(settings, warm.wait)
    embedding = BackgroundEmbedding(warm.wait)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        # Entered once per process for stdio and streamable HTTP, once per session for SSE:
        # starting is idempotent, and the library lives as long as the process.
        warm.start()
        embedding.start()
        syncing.start()
        try:
            yield None
        finally:
            # A client that leaves during the warm-up: the library finishes opening (and is then
            # closed) rather than being cut off by the interpreter's exit half way through.
            await anyio.to_thread.run_sync(warm.wait)
            await anyio.to_thread.run_sync(syncing.stop)  # the watch turn passes to another process

    server: MCPServer[Any] = PastchatsServer(
        name="pastchats",
        title="pastchats: your past chats",
        instructions=INSTRUCTIONS,
        version=version("pastchats"),
        lifespan=lifespan,
        log_level=settings.log_level,
        extensions=[search_view()],
    )
    budget = settings.output_budget_chars
    conversation_search.register(server, warm.get, budget)
    recent_chats.register(server, warm.get, budget)
    read_chat.register(server, warm.get, budget)
    return server
