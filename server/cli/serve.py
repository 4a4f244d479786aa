"""`pastchats serve`: the MCP server, over stdio for desktop clients or over HTTP on a port."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal

import click

from server.cli.common import make_settings

if TYPE_CHECKING:
    from server.settings import Settings
    from storage.library import Library


@click.command()
@click.option(
    "--transport",
    type=click.Choice(["stdio", "sse", "streamable-http"]),
    default="stdio",
    show_default=True,
)
@click.option("--host", help="Interface for sse/streamable-http [PASTCHATS_HOST, default 127.0.0.1].")
@click.option("--port", type=int, help="Port for sse/streamable-http [PASTCHATS_PORT, default 8765].")
@click.pass_context
def serve(
    ctx: click.Context, transport: Literal["stdio", "sse", "streamable-http"], host: str | None, port: int | None
) -> None:
    """Run the MCP server (stdio for desktop clients; sse or streamable-http on a port)."""
    from server import transports
    from server.services.opening import open_store

    settings = make_settings(ctx, host=host, port=port)
    transports.stop_at_once_on_ctrl_c()
    if transport == "stdio" and sys.stdin.isatty():
        click.echo(
            "pastchats: waiting for an MCP client on stdin (Ctrl-C stops). To connect a client, run "
            "`pastchats setup claude-desktop` (or claude-code, cursor, vscode).",
            err=True,
        )
    if transport != "stdio":
        transports.check_binding(settings)
        path = "/sse" if transport == "sse" else "/mcp"
        click.echo(f"pastchats: serving on http://{settings.host}:{settings.port}{path}", err=True)
    opened_libraries: list[Library] = []

    def factory(s: Settings) -> Library:
        opened_libraries.append(open_store(s, "search"))
        return opened_libraries[-1]

    try:
        from server.app import build_server

        transports.serve(build_server(settings, factory), settings, transport)
    except KeyboardInterrupt:
        pass
    finally:
        for library in opened_libraries:
            library.close()


COMMANDS: list[click.Command] = [serve]
