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
from typing import TYPE_CHECKING, Any, Literal

from storage.errors import PastchatsError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
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


def serve(server: MCPServer[Any], settings: Settings, transport: Transport) -> None:
    if transport == "stdio":
        server.run("stdio")
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
