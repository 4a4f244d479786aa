"""The `pastchats` command group (click): import chat histories, query them as the tools do, serve them
over MCP. `server.cli.main` runs it, after answering the commonest read-only commands without it."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import click

from server.cli_common import (
    ISO,
    PastchatsGroup,
    as_tool,
    catalog_or_library,
    catalog_or_store,
    emit,
    json_option,
    make_settings,
    opened,
)
from server.cli_data import COMMANDS
from server.cli_model import model as model_commands
from server.cli_quick import recent_text, stats_text
from server.cli_setup import doctor, setup

if TYPE_CHECKING:
    from server.settings_quick import QuickSettings
    from storage.library import Library


class FormatChoice(click.Choice[str]):
    """The importers' format names, listed only when shown or checked: importing the importers (and
    pydantic with them) would slow down every `--help` and argument error."""

    def __init__(self) -> None:
        super().__init__([])

    @property  # click sets a plain attribute; this one is computed
    def choices(self) -> tuple[str, ...]:
        from importers import registry

        return tuple(registry.names())

    @choices.setter
    def choices(self, value: object) -> None:
        pass


@click.group(cls=PastchatsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False, path_type=Path), help="Store directory [PASTCHATS_HOME].")
@click.option("--model", help="fastembed embedding model [PASTCHATS_MODEL].")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(package_name="pastchats-mcp")
@click.pass_context
def cli(ctx: click.Context, home: Path | None, model: str | None, verbose: int) -> None:
    """A local, searchable memory of your past chats, for any MCP client."""
    levels = {0: None, 1: "INFO"}
    ctx.ensure_object(dict).update(home=home, model=model, log_level=levels.get(verbose, "DEBUG"))


@cli.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "format_", type=FormatChoice(), help="Skip detection.")
@click.option("--sample", is_flag=True, help="Import the bundled sample chats, to try pastchats out.")
@json_option
@click.pass_context
def import_(ctx: click.Context, paths: tuple[Path, ...], format_: str | None, sample: bool, as_json: bool) -> None:
    """Import chat histories: exports, logs, or plain JSON. Re-importing is always safe.

    Without an embedding model the chats are imported all the same, keyword-searchable at once; their
    passages are embedded once a model is installed (`pastchats model install`).
    """
    if not paths and not sample:
        raise click.UsageError("pass one or more files or folders to import, or --sample")
    from importers import registry
    from importers.base import SourceError
    from server import wiring

    settings = make_settings(ctx)
    for path in paths:  # a wrong path or format fails here, before the store and the model load
        try:
            registry.choose(path, format_)
        except SourceError as exc:
            raise click.ClickException(str(exc)) from None
    # deferred: the store pulls in lancedb, the embedder fastembed (start-up speed; see above)
    from server.embedding import embed_with_progress
    from server.importing import import_source, sample_path, summary_text, totals

    with ExitStack() as stack:
        sources: list[tuple[Path, str | None, str | None]] = [(path, format_, None) for path in paths]
        if sample:
            sources.append((stack.enter_context(sample_path()), None, "sample chats"))
        library = stack.enter_context(opened(settings))
        exclusions = wiring.exclusions_from(settings)
        summaries = [import_source(library, path, fmt, not as_json, label, exclusions) for path, fmt, label in sources]
        embed_with_progress(library, show=not as_json)
        waiting = library.pending_embeddings()
    if as_json:
        records = [dataclasses.asdict(s) for s in summaries]
        output = {"sources": records, "total": totals(summaries), "awaiting_embeddings": waiting}
        click.echo(json.dumps(output, indent=2))
    else:
        click.echo(summary_text(summaries))
        if waiting:
            click.echo(
                f"{waiting} passage(s) await embeddings: keyword search works now; semantic search once the "
                "model is installed (`pastchats model install`)."
            )


@cli.command()
@click.argument("query")
@click.option("--max-results", type=click.IntRange(1, 10), default=5, show_default=True)
@click.option("--project", help="Only chats in this project or workspace.")
@click.option("--after", type=ISO, help="Only chats updated after this time.")
@click.option("--before", type=ISO, help="Only chats updated before this time.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    max_results: int,
    project: str | None,
    after: datetime | None,
    before: datetime | None,
    as_json: bool,
) -> None:
    """Search past chats by topic: what the conversation_search tool answers."""
    from tools import topic_search  # the tool's body, without the MCP SDK

    settings = make_settings(ctx)
    with opened(settings) as library:
        output, text = as_tool(
            topic_search.NAME,
            lambda: topic_search.search(
                library,
                query,
                max_results=max_results,
                project=project,
                after=after,
                before=before,
                budget=settings.output_budget_chars,
            ),
        )
    emit(output, text, as_json)


@cli.command()
@click.option("-n", type=click.IntRange(1, 20), default=3, show_default=True, help="How many chats.")
@click.option("--sort-order", type=click.Choice(["asc", "desc"]), default="desc", show_default=True)
@click.option("--before", type=ISO, help="Only chats updated before this time (the next page).")
@click.option("--after", type=ISO, help="Only chats updated after this time.")
@click.option("--project", help="Only chats in this project or workspace.")
@json_option
@click.pass_context
def recent(
    ctx: click.Context,
    n: int,
    sort_order: Literal["asc", "desc"],
    before: datetime | None,
    after: datetime | None,
    project: str | None,
    as_json: bool,
) -> None:
    """List past chats by time: what the recent_chats tool answers."""
    from tools.recent_listing import NAME  # deferred: the output models (start-up speed of --help)

    settings = make_settings(ctx)
    with ExitStack() as stack:
        source = catalog_or_library(settings, stack)
        text = as_tool(
            NAME,
            lambda: recent_text(
                source,
                settings.output_budget_chars,
                n=n,
                sort_order=sort_order,
                before=before,
                after=after,
                project=project,
                as_json=as_json,
            ),
        )
    click.echo(text)


@cli.command()
@click.argument("uri")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--limit", type=click.IntRange(1, 100), default=40, show_default=True)
@click.option("--around", help="A message number (as shown) or id to centre the page on.")
@json_option
@click.pass_context
def read(ctx: click.Context, uri: str, offset: int, limit: int, around: str | None, as_json: bool) -> None:
    """Read a past chat's messages, a page at a time: what the read_chat tool answers."""
    from tools import read_page  # deferred: the output models (start-up speed of --help)

    settings = make_settings(ctx)
    with ExitStack() as stack:
        # The catalog answers read_chat as the library does (`storage.reading`): no LanceDB when current.
        library = cast("Library", catalog_or_store(settings, stack))
        output, text = as_tool(
            read_page.NAME,
            lambda: read_page.read(
                library, uri, offset=offset, limit=limit, around=around, budget=settings.output_budget_chars
            ),
        )
    emit(output, text, as_json)


@cli.command()
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
    from server import stdio_front  # the standard library only: answers `initialize` while the SDK loads

    front = stdio_front.start() if transport == "stdio" else None
    from server import transports, wiring  # deferred (start-up speed)

    # Over stdio the store opens, and the front answers the first calls, on the settings read without
    # pydantic-settings (its import and the `Settings` build: ~0.1 s of CPU before the first result;
    # the same values, or none and the full reader now); the full `Settings` follow, before the SDK.
    early = quick_serving_settings(ctx) if front is not None and host is None and port is None else None
    settings = make_settings(ctx, host=host, port=port) if early is None else None
    transports.stop_at_once_on_ctrl_c()
    if transport == "stdio" and sys.stdin.isatty():
        click.echo(
            "pastchats: waiting for an MCP client on stdin (Ctrl-C stops). To connect a client, run "
            "`pastchats setup claude-desktop` (or claude-code, cursor, vscode).",
            err=True,
        )
    if settings is not None and transport != "stdio":
        transports.check_binding(settings)
        path = "/sse" if transport == "sse" else "/mcp"
        click.echo(f"pastchats: serving on http://{settings.host}:{settings.port}{path}", err=True)
    opened_libraries: list[Library] = []

    def factory(s: wiring.StoreSettings) -> Library:
        opened_libraries.append(wiring.open_for_serving(s))
        return opened_libraries[-1]

    try:
        start = early or settings
        assert start is not None  # one of the two was read above
        warm = transports.warm_up_behind_front(front, lambda: factory(start), start.output_budget_chars)
        if settings is None:
            settings = make_settings(ctx, log=False)
            logging.getLogger("pastchats.server").debug("settings read in full, after the front's first calls")
        from server.app import build_server  # deferred: pulls in the MCP SDK (start-up speed)

        transports.serve(build_server(settings, factory, warm), settings, transport, front)
    except KeyboardInterrupt:
        pass
    finally:
        for library in opened_libraries:
            library.close()


def quick_serving_settings(ctx: click.Context) -> QuickSettings | None:
    """The flags and environment as `Settings` reads them, for the fields opening the store and logging
    read, without pydantic; None when only `Settings` can say (lists, unusual values, errors)."""
    from server.logs import configure_logging
    from server.settings_quick import quick_settings

    given = ctx.ensure_object(dict)
    quick = quick_settings(home=given.get("home"), model=given.get("model"), log_level=given.get("log_level"))
    if quick is not None:
        configure_logging(quick)
    return quick


@cli.command()
@json_option
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """What the store holds: chats, messages, sources, projects, time span, model, size."""
    settings = make_settings(ctx)
    with ExitStack() as stack:
        text = stats_text(catalog_or_library(settings, stack), as_json)
    click.echo(text)


for command in [*COMMANDS, model_commands, setup, doctor]:
    cli.add_command(command)
