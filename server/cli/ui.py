"""`pastchats ui`: a page in the browser to search, browse, read and delete past chats (`server.ui`)."""

from __future__ import annotations

import click

from server.cli.common import make_settings


@click.command()
@click.option("--port", type=click.IntRange(0, 65_535), default=0, help="Port on 127.0.0.1 (default: any free one).")
@click.option("--no-browser", is_flag=True, help="Print the address only; do not open a browser.")
@click.pass_context
def ui(ctx: click.Context, port: int, no_browser: bool) -> None:
    """Open a page to search, browse, read and delete your past chats (on this machine only).

    The page is served on 127.0.0.1 with a secret token in its address; only your browser, given
    that address, can open it. Ctrl-C stops it.
    """
    from server import transports
    from server.services.opening import open_store
    from server.ui.serving import listen, serve

    settings = make_settings(ctx)
    transports.stop_at_once_on_ctrl_c()
    listener = listen(port)
    library = open_store(settings, "search")
    try:
        serve(settings, library, listener, open_browser=not no_browser, say=lambda line: click.echo(line, err=True))
    finally:
        library.close()


COMMANDS: list[click.Command] = [ui]
