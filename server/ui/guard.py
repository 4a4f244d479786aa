"""Who may use the page: whoever holds the token `pastchats ui` printed, from this machine's browser.

Jupyter's way: the token comes in the first URL (`/?token=…`), is swapped for a cookie (HttpOnly,
SameSite=Strict, named after the port, since cookies are shared by every port of a host) and the
browser is sent on to the same address without it, so links and reloads work and the token does not
stay in the address bar. Any other request is refused. Host and Origin are checked as the HTTP
transport checks them (`server.transports.ExactHost`, wrapped around this). Every answer forbids
anything not served here (Content-Security-Policy), being framed, and sending a Referer to another
site (a chat's link back to claude.ai must not carry the address).

A form that changes the store (delete, forget) also carries `csrf_token(token)`: a page of another
site cannot know it, whatever the browser does with cookies.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Not `no-referrer`: with it Chromium sends `Origin: null` on the page's own forms, which the Origin
    # check must refuse. `same-origin` still sends nothing to another site (links out add noreferrer too).
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
REFUSED = (
    b"This page needs the link that `pastchats ui` printed (it holds a token). Run `pastchats ui` again to get one."
)


def cookie_name(port: int) -> str:
    """Cookies are shared by every port of a host: each page's is named after its port."""
    return f"pastchats-ui-{port}"


def csrf_token(token: str) -> str:
    """What a store-changing form sends back: derived from the token, so only a page served here has it."""
    return hmac.new(token.encode(), b"pastchats-ui-form", hashlib.sha256).hexdigest()


def csrf_ok(token: str, sent: object) -> bool:
    return isinstance(sent, str) and hmac.compare_digest(sent.encode(), csrf_token(token).encode())


def _here(path: str) -> str:
    """`path` as a location on this page: quoted (no line break or other byte can reach the header) and
    with one leading slash (`//evil.com/` or `/\\evil.com/` would be another site to a browser)."""
    return "/" + quote(path.lstrip("/\\"), safe="/")


class TokenGate:
    """ASGI middleware: the token (in the query once, then the cookie) on every request; the safety
    headers on every answer."""

    def __init__(self, app: ASGIApp, token: str, port: int):
        self.app = app
        self._token = token.encode()
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = HTTPConnection(scope)
        query = request.query_params.multi_items()
        given = [value for name, value in query if name == "token"]
        if given and self._matches(given[-1].encode()):
            rest = urlencode([(name, value) for name, value in query if name != "token"])
            await self._answer(
                send, 303, b"", [(b"location", (_here(scope["path"]) + (f"?{rest}" if rest else "")).encode())]
            )
        elif self._matches(request.cookies.get(self.cookie, "").encode()):

            async def with_headers(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", []), *HEADERS]
                await send(message)

            await self.app(scope, receive, with_headers)
        else:
            await self._answer(send, 403, REFUSED, [(b"content-type", b"text/plain; charset=utf-8")])

    def _matches(self, value: bytes) -> bool:
        return bool(value) and hmac.compare_digest(value, self._token)

    async def _answer(self, send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        cookie = f"{self.cookie}={self._token.decode()}; Path=/; HttpOnly; SameSite=Strict".encode()
        extra = [(b"set-cookie", cookie)] if status == 303 else []
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, *extra, *HEADERS, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
