"""Running the server: stdio for desktop clients, streamable HTTP or SSE for everything else.

Over HTTP on a loopback interface, DNS rebinding is refused: the Host header must name this server
exactly (host and port, else 421) and an Origin, when sent, must be exactly this server's (else 403).
The SDK's own check matches prefixes (`127.0.0.1:PORT@evil.com` passed it), so ours compares whole
values. Bound to any other interface, the server refuses to start without a bearer token, and checks
it on every request.

Over stdio, a line the SDK cannot read as a JSON-RPC message (not JSON, nested past its parser's depth,
a lone surrogate escape) reaches the server as an exception, which it drops: the client would wait for
its timeout. `AnswerUnreadable` answers each with a JSON-RPC error instead, naming the request's id when
the line holds one, as the HTTP transports answer the same with 400.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, Literal

from storage.errors import PastchatsError

if TYPE_CHECKING:
    from types import TracebackType

    from mcp.server.mcpserver import MCPServer
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage
    from starlette.types import ASGIApp, Receive, Scope, Send

    from server.settings import Settings

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


class AnswerUnreadable:
    """The stdio transport's read side, answering every line it could not read with a JSON-RPC error
    (`PARSE_ERROR`, or `INVALID_REQUEST` for JSON that is no JSON-RPC message) and passing the rest on."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]):
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> object:  # the SDK reads the sender's context from here
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(unreadable_answer(item))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnswerUnreadable:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnswerUnreadable:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()


def unreadable_answer(error: Exception) -> SessionMessage:
    """The JSON-RPC error for a line the transport could not read: its id when Python's own parser
    finds one (it takes lone surrogates), else null, as JSON-RPC has it for a parse error."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    line: object = None
    reason = " ".join(str(error).split())[:300]
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        line, reason = first.get("input"), first.get("msg", reason)
    request_id: str | int | None = None
    code = types.PARSE_ERROR
    try:
        parsed = json.loads(line) if isinstance(line, str | bytes) else line
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        found = parsed.get("id")
        request_id = found if isinstance(found, str | int) and not isinstance(found, bool) else None
        if not str(reason).startswith("Invalid JSON"):
            code = types.INVALID_REQUEST
    answer = types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=code, message=f"{reason}; send the request again as valid JSON-RPC in UTF-8"),
    )
    return SessionMessage(answer)


async def _serve_stdio(server: MCPServer[Any]) -> None:
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # what `MCPServer.run_stdio_async` serves, given our read side
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            AnswerUnreadable(read_stream, write_stream), write_stream, lowlevel.create_initialization_options()
        )


def serve(server: MCPServer[Any], settings: Settings, transport: Transport) -> None:
    if transport == "stdio":
        import anyio

        anyio.run(_serve_stdio, server)
        return
    check_binding(settings)
    import uvicorn

    # `pastchats serve` has said where it listens, once and plainly, before the store opened
    config = uvicorn.Config(
        http_app(server, settings, transport),
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's own config sends access logs to stdout; ours go to stderr or a file
        log_level=settings.log_level.lower(),
        access_log=settings.log_level == "DEBUG",
    )
    uvicorn.Server(config).run()
