"""Serving the page: a loopback socket, a fresh token, uvicorn, and the browser opened on the address."""

from __future__ import annotations

import logging
import secrets
import socket
import threading
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING

from server.ui.app import build_app
from server.ui.guard import cookie_name
from storage.errors import PastchatsError

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.library import Library


class PortTaken(PastchatsError):
    """The port asked for cannot be listened on."""


logger = logging.getLogger("pastchats.server")

HOST = "127.0.0.1"  # loopback only, whatever PASTCHATS_HOST says: the page reads and deletes chats


def listen(port: int) -> socket.socket:
    """The page's socket on loopback, bound before the store opens so a taken port fails at once
    (port 0: the system picks a free one); the Host check and the address printed use its port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        listener.close()
        raise PortTaken(
            f"cannot listen on {HOST}:{port} ({exc.strerror}); pass another --port, or leave it out"
        ) from None
    return listener


def serve(
    settings: Settings, library: Library, listener: socket.socket, *, open_browser: bool, say: Callable[[str], None]
) -> None:
    """Serve on `listener` until stopped, with a token made for this run; say the address once listening."""
    import uvicorn

    port = listener.getsockname()[1]
    token = secrets.token_urlsafe(32)
    address = f"http://{HOST}:{port}/?token={token}"
    config = uvicorn.Config(
        build_app(settings, library, token, port),
        log_config=None,  # ours go to stderr or the log file
        log_level=settings.log_level.lower(),
        access_log=settings.log_level == "DEBUG",
    )
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.02)
        if server.started:
            warm_up(port, token)
            say(f"pastchats: your chats at {address}  (Ctrl-C stops)")
            if open_browser:
                webbrowser.open(address)

    threading.Thread(target=announce, name="pastchats-ui-announce", daemon=True).start()
    server.run(sockets=[listener])


def warm_up(port: int, token: str) -> None:
    """Ask for the first page once before saying the address: the first request through the app pays
    for imports (anyio's thread pool, the result models) and cold reads that would otherwise make the
    user's first page three times slower."""
    import http.client

    connection = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        connection.request("GET", "/", headers={"Cookie": f"{cookie_name(port)}={token}"})
        connection.getresponse().read()
    except OSError as exc:  # the page still works; only its first answer is slower
        logger.info("warming up the page failed (%s)", exc)
    finally:
        connection.close()
