"""The MCP server: three read-only tools over one library, opened in the background at start-up.

Opening the library (LanceDB, Tantivy, the embedding model) takes seconds; `initialize` must not wait
for it. The lifespan starts the warm-up on a thread and returns at once; a tool call awaits it.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from server import wiring
from server.background import BackgroundSync
from server.embedding import BackgroundEmbedding
from server.settings import Settings
from storage.errors import PastchatsError, StoreError
from tools import conversation_search, read_chat, recent_chats
from tools.arguments import ArgumentError, check_arguments, explain
from tools.errors import tool_error
from tools.instructions import INSTRUCTIONS

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.server")

LibraryFactory = Callable[[Settings], "Library"]


# Objects the cyclic collector lets pile up before it looks at the young ones (Python's default: 700).
# A search briefly holds ~1-2 thousand (its candidates), so at 700 every search paid ~3 young
# collections and now and then a full one over everything start-up left (450-700 ms at load 11-14);
# memory is freed by reference counting either way. At 10,000, 120 searches on the 100k store ran none.
SERVING_GC_THRESHOLD = 10_000


def serving_collector() -> None:
    """Once the library is open (start-up's garbage collected as usual), collect for serving."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, SERVING_GC_THRESHOLD), middle, old)


class WarmLibrary:
    """Opens the library once, on a background thread; every tool call awaits the same outcome."""

    def __init__(self, open_library: Callable[[], Library]):
        self._open = open_library
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._library: Library | None = None
        self._error: str | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="pastchats-warm-up", daemon=True)
                self._thread.start()

    def _load(self) -> None:
        try:
            self._library = self._open()
            serving_collector()
            logger.info("library ready")
        except Exception as exc:
            if isinstance(exc, PastchatsError):
                logger.error("cannot open the pastchats store: %s", exc)
                self._error = str(exc)
            else:
                logger.exception("cannot open the pastchats store")
                self._error = "see the server log for details"
        finally:
            self._done.set()

    def wait(self) -> Library | None:
        """Block until the warm-up ends (for background threads); None if the store did not open."""
        self.start()
        self._done.wait()
        return self._library

    async def get(self) -> Library:
        self.start()
        if not self._done.is_set():
            await anyio.to_thread.run_sync(self._done.wait, abandon_on_cancel=True)
        if self._library is None:
            raise tool_error(
                StoreError(
                    f"The pastchats store could not be opened ({self._error}). Tell the user; "
                    "`pastchats stats` in a terminal shows the problem."
                )
            )
        return self._library


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
    factory = library_factory or wiring.open_for_serving
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
        yield None

    server: MCPServer[Any] = PastchatsServer(
        name="pastchats",
        title="pastchats: your past chats",
        instructions=INSTRUCTIONS,
        version=version("pastchats-mcp"),
        lifespan=lifespan,
        log_level=settings.log_level,
    )
    budget = settings.output_budget_chars
    conversation_search.register(server, warm.get, budget)
    recent_chats.register(server, warm.get, budget)
    read_chat.register(server, warm.get, budget)
    return server
