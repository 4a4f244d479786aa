"""Running the server: stdio for desktop clients, streamable HTTP or SSE for everything else.

Over HTTP on a loopback interface, DNS rebinding is refused: the Host header must name this server
exactly (host and port, else 421) and an Origin, when sent, must be exactly this server's (else 403).
The SDK's own check matches prefixes (`127.0.0.1:PORT@evil.com` passed it), so ours compares whole
values. Bound to any other interface, the server refuses to start without a bearer token, and checks
it on every request.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from server.warm_up import WarmLibrary
from storage.errors import PastchatsError

if TYPE_CHECKING:  # the SDK (and pydantic-settings) once the stdio front has done what it can without them
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Receive, Scope, Send

    from server.settings import Settings
    from server.stdio_front import StdioFront
    from storage.library import Library

Transport = Literal["stdio", "sse", "streamable-http"]

logger = logging.getLogger("pastchats.server")


class InsecureBinding(PastchatsError):
    """Refusing to listen on a non-loopback interface without a token."""


class BearerToken:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`; else 401."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "invalid_token", "error_description": "send Authorization: Bearer <PASTCHATS_HTTP_TOKEN>"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="pastchats"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _authorised(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token):
                    return True
        return False


async def _refuse(send: Send, status: int, message: str) -> None:
    body = message.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ExactHost:
    """ASGI middleware for loopback binds: Host exactly one of our loopback names with our port (421
    otherwise), and Origin, when present, exactly one of the matching http origins (403 otherwise)."""

    def __init__(self, app: ASGIApp, port: int):
        self.app = app
        names = ("127.0.0.1", "localhost", "[::1]")
        self._hosts = {f"{name}:{port}".encode() for name in names}
        self._origins = {f"http://{name}:{port}".encode() for name in names}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [value for name, value in scope["headers"] if name == b"host"]
        origins = [value for name, value in scope["headers"] if name == b"origin"]
        if len(hosts) != 1 or hosts[0].lower() not in self._hosts:
            await _refuse(send, 421, "Invalid Host header")
        elif len(origins) > 1 or (origins and origins[0].lower() not in self._origins):
            await _refuse(send, 403, "Invalid Origin header")
        else:
            await self.app(scope, receive, send)


def stop_at_once_on_ctrl_c() -> None:
    """Ctrl-C ends the server immediately, whatever the transport.

    Left to Python, it waits: the stdio transport reads stdin on a thread that only a new line or EOF
    ends, and uvicorn waits for open SSE streams to close. Nothing needs flushing (every write commits;
    a write cut short is repaired by the next start), so the process just exits.
    """

    def stop(signum: int, frame: object) -> None:
        print("pastchats: stopped", file=sys.stderr, flush=True)
        os._exit(130)

    signal.signal(signal.SIGINT, stop)


def check_binding(settings: Settings) -> None:
    if not settings.is_loopback and not settings.http_token:
        raise InsecureBinding(
            f"refusing to listen on {settings.host} without a token: anyone who can reach it could read "
            "your chats. Set PASTCHATS_HTTP_TOKEN (clients send it as 'Authorization: Bearer <token>'), "
            "or listen on 127.0.0.1."
        )


def http_app(server: MCPServer[Any], settings: Settings, transport: Transport) -> ASGIApp:
    # host= lets the SDK switch DNS-rebinding protection on for loopback addresses.
    if transport == "sse":
        app: ASGIApp = server.sse_app(host=settings.host)
    else:
        app = server.streamable_http_app(host=settings.host)
    if settings.http_token:
        app = BearerToken(app, settings.http_token)
    return ExactHost(app, settings.port) if settings.is_loopback else app


# How long the SDK's import waits, once the library is open, for tool calls the front is running.
CALLS_BEFORE_THE_SDK_SECONDS = 2.0
# How long the process waits at the end for a tool call the front is still running.
LAST_CALL_SECONDS = 60.0


def warm_up_behind_front(
    front: StdioFront | None, open_library: Callable[[], Library], budget: int
) -> WarmLibrary | None:
    """With the stdio front answering (`server.stdio_front`), the library opens now, before the SDK is
    imported, and the front runs tool calls on it; the SDK's import waits for both, as on 2 cores
    each would only slow the other down. None (the server opens the library itself) when the front
    stepped aside."""
    if front is None:
        return None
    front.wait_for_first_line()
    if front.early is None:
        return None
    logger.debug("the stdio front answers tool calls from the library while the MCP SDK waits")
    warm = WarmLibrary(open_library)
    warm.start()
    front.serve_calls(warm.wait, budget)
    warm.wait()
    front.wait_for_calls(CALLS_BEFORE_THE_SDK_SECONDS)
    return warm


async def serve_behind_front(server: MCPServer[Any], front: StdioFront) -> None:
    """What `server.run("stdio")` does, on the streams the front hands over (`server.stdio_front`)."""
    import anyio
    import anyio.to_thread
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's own stdio run serves this, with these options
    # The wire is a text file as far as anyio uses it (write, flush), not a whole `IO[str]`.
    stdin, stdout = anyio.wrap_file(front.sdk_stdin()), anyio.wrap_file(cast("IO[str]", front.sdk_stdout()))
    front.divert_standard_streams()
    try:
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        front.restore_standard_streams()
    # A call the front took is finished by the front, before the library it reads is closed.
    await anyio.to_thread.run_sync(front.wait_for_calls, LAST_CALL_SECONDS)


def serve(server: MCPServer[Any], settings: Settings, transport: Transport, front: StdioFront | None = None) -> None:
    if transport == "stdio" and front is not None:
        import anyio

        anyio.run(serve_behind_front, server, front)
        return
    if transport == "stdio":
        server.run("stdio")
        return
    check_binding(settings)
    import uvicorn

    path = "/sse" if transport == "sse" else "/mcp"
    logger.warning("pastchats listening on http://%s:%d%s", settings.host, settings.port, path)
    config = uvicorn.Config(
        http_app(server, settings, transport),
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's own config sends access logs to stdout; ours go to stderr or a file
        log_level=settings.log_level.lower(),
        access_log=settings.log_level == "DEBUG",
    )
    uvicorn.Server(config).run()
