"""The MCP server: three read-only tools over one library, opened in the background at start-up.

Opening the library (LanceDB, Tantivy, the embedding model) takes seconds; `initialize` must not wait
for it. The lifespan starts the warm-up on a thread and returns at once; a tool call awaits it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from server import wiring
from server.background import BackgroundSync
from server.settings import Settings
from tools import conversation_search, read_chat, recent_chats
from tools.instructions import INSTRUCTIONS

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.server")

LibraryFactory = Callable[[Settings], "Library"]


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
            logger.info("library ready")
        except Exception as exc:
            from storage.library import StoreError  # deferred: pulls in lancedb (start-up speed)

            if isinstance(exc, StoreError):
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
            raise ToolError(
                f"The pastchats store could not be opened ({self._error}). Tell the user; "
                "`pastchats stats` in a terminal shows the problem."
            )
        return self._library


def build_server(settings: Settings, library_factory: LibraryFactory | None = None) -> MCPServer[Any]:
    """The MCP server with its three tools. Tests pass a factory returning a library they built."""
    factory = library_factory or wiring.open_library
    warm = WarmLibrary(lambda: factory(settings))
    syncing = BackgroundSync(settings, warm.wait)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        # Entered once per process for stdio and streamable HTTP, once per session for SSE:
        # starting is idempotent, and the library lives as long as the process.
        warm.start()
        syncing.start()
        yield None

    server: MCPServer[Any] = MCPServer(
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
