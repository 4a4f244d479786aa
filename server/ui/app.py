"""The page's web application: its routes, each page rendered whole on the server, and the one
stylesheet and script it ships (`server/ui/static`), behind the token gate and the Host/Origin check.

Route handlers are plain functions: Starlette runs them on its worker threads, as the MCP server runs
its tools, so a search never holds up another request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.resources import files
from typing import TYPE_CHECKING

from server.transports import ExactHost
from server.ui import chat, forget, search, store, timeline
from server.ui.context import BadInput, Context
from server.ui.guard import TokenGate, csrf_ok, csrf_token
from server.ui.markup import Html, notice, page
from storage.errors import NotFound

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp

    from server.settings import Settings
    from storage.library import Library

Page = Callable[[Context, dict[str, str]], tuple[str, Html]]
STATIC = {
    "ui.css": "text/css; charset=utf-8",
    "ui.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}


def _html(body: Html, status: int = 200) -> Response:
    from starlette.responses import Response

    # Chat text may hold lone surrogates that `clean` missed in old stores: never a failed answer.
    return Response(body.encode("utf-8", "replace"), status, media_type="text/html; charset=utf-8")


def build_app(settings: Settings, library: Library, token: str, port: int) -> ASGIApp:
    """The whole application for `token` on loopback `port` (tests build it as `pastchats ui` does)."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    ctx = Context(settings, library, csrf_token(token))
    assets = {name: (files("server.ui") / "static" / name).read_bytes() for name in STATIC}

    def showing(render: Page, current: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                title, body = render(ctx, dict(request.query_params))
            except NotFound as exc:  # deleted, or never imported
                return _html(page("Not found", notice(str(exc), "bad"), current=current), 404)
            except BadInput as exc:
                return _html(page("Not understood", notice(str(exc), "bad"), current=current), 400)
            return _html(page(title, body, current=current))

        return endpoint

    def changing(act: Page, current: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
            if not csrf_ok(token, form.get("csrf")):
                refused = notice(
                    "This form is out of date or came from elsewhere: reload the page and try again.", "bad"
                )
                return _html(page("Refused", refused, current=current), 403)
            title, body = await run_in_threadpool(act, ctx, form)
            return _html(page(title, body, current=current))

        return endpoint

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return Response(b"", 404)
        return Response(assets[name], media_type=STATIC[name])

    routes = [
        Route("/", showing(search.render, "/")),
        Route("/timeline", showing(timeline.render, "/timeline")),
        Route("/chat", showing(chat.render, "")),
        Route("/delete", showing(forget.ask_delete, ""), methods=["GET"]),
        Route("/delete", changing(forget.do_delete, ""), methods=["POST"]),
        Route("/forget", showing(forget.ask_forget, "/forget"), methods=["GET"]),
        Route("/forget", changing(forget.do_forget, "/forget"), methods=["POST"]),
        Route("/store", showing(store.render, "/store")),
        Route("/health", showing(store.health, "/health")),
        Route("/static/{name}", asset),
    ]
    app = Starlette(routes=routes)
    return ExactHost(TokenGate(app, token, port), port)
