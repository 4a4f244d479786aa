"""`pastchats search | recent | read | resume | stats`: the store queried as the MCP tools query it, with
the tools' own text (or their structured result with `--json`) and their error messages; `resume`, the
command that continues a chat's session in the agent it came from."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

import click

from server.cli.common import (
    PROJECT_HELP,
    WHEN,
    WHEN_HELP,
    as_tool,
    emit,
    json_option,
    known_names,
    make_settings,
    opened,
    recent_text,
    stats_text,
)

if TYPE_CHECKING:
    pass

# Seconds a search waits for the shared store to say whether it answers (it answers from this
# machine's indexes either way; the wait only decides whether it says the store was unreachable).
PROBE_WAIT = 5.0


@click.command()
@click.argument("query", default="")
@click.option("--max-results", type=click.IntRange(1, 10), default=5, show_default=True)
@click.option("--project", help=PROJECT_HELP)
@click.option("--after", type=WHEN, help=f"Only messages written after this time: {WHEN_HELP}.")
@click.option("--before", type=WHEN, help=f"Only messages written before this time: {WHEN_HELP}.")
@click.option(
    "--file",
    metavar="PATH",
    help="Only chats whose agent edited, created or read this file: a path or its end (auth/session.py). "
    "Without a query, the chats that touched it.",
)
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    max_results: int,
    project: str | None,
    after: datetime | None,
    before: datetime | None,
    file: str | None,
    as_json: bool,
) -> None:
    """Search past chats by topic, as your assistant's search tool does."""
    from tools import conversation_search

    settings = make_settings(ctx)
    with opened(settings, "search") as library:
        known_names(library, project=project)
        if library.shared_probe is not None:  # the note on an unreachable shared store needs its answer
            library.shared_probe.join(timeout=PROBE_WAIT)
        output, text = as_tool(
            conversation_search.NAME,
            lambda: conversation_search.search(
                library,
                query,
                max_results=max_results,
                project=project,
                after=after,
                before=before,
                file=file,
                budget=settings.output_budget_chars,
            ),
        )
    emit(output, text, as_json)


@click.command()
@click.option("-n", type=click.IntRange(1, 20), default=3, show_default=True, help="How many chats.")
@click.option("--sort-order", type=click.Choice(["asc", "desc"]), default="desc", show_default=True)
@click.option("--before", type=WHEN, help=f"Only chats updated before this time (the next page): {WHEN_HELP}.")
@click.option("--after", type=WHEN, help=f"Only chats updated after this time: {WHEN_HELP}.")
@click.option("--project", help=PROJECT_HELP)
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
    """List past chats by time, as your assistant's recent-chats tool does."""
    from tools.recent_chats import NAME

    settings = make_settings(ctx)
    with opened(settings, "read") as source:
        known_names(source, project=project)
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


@click.command()
@click.argument("uri")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--limit", type=click.IntRange(1, 100), default=40, show_default=True)
@click.option("--around", help="A message number (as shown) or id to centre the page on.")
@json_option
@click.pass_context
def read(ctx: click.Context, uri: str, offset: int, limit: int, around: str | None, as_json: bool) -> None:
    """Read a past chat's messages, a page at a time, as your assistant's reading tool does."""
    from tools import read_chat

    settings = make_settings(ctx)
    with opened(settings, "read") as library:
        output, text = as_tool(
            read_chat.NAME,
            lambda: read_chat.read(
                library, uri, offset=offset, limit=limit, around=around, budget=settings.output_budget_chars
            ),
        )
    emit(output, text, as_json)


@click.command()
@click.argument("uri")
@click.pass_context
def resume(ctx: click.Context, uri: str) -> None:
    """Print the command that continues a chat's session in the agent it came from, in its folder.

    URI as a result shows it, or its start. It says so when the agent has no such command.
    """
    import shlex

    from server.services.resume import resume_command
    from storage.errors import AmbiguousUri, NotFound

    settings = make_settings(ctx)
    with opened(settings, "read") as library:
        try:
            found = resume_command(library, uri)
        except AmbiguousUri as exc:
            whole = shlex.quote(exc.candidates[0])
            raise click.ClickException(f"{exc}. Pass more of it, or one whole: pastchats resume {whole}") from None
        except NotFound as exc:
            raise click.ClickException(
                f"{exc}. Find the chat's uri with `pastchats search WORDS` or `pastchats recent`."
            ) from None
    if found.command is None:
        raise click.ClickException(f"{found.reason}. Read the chat instead: pastchats read {shlex.quote(found.uri)}")
    if found.folder is None:
        click.echo(f"{found.uri} recorded no folder: run this in the session's project folder.", err=True)
    click.echo(found.command)


@click.command()
@json_option
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """What the store holds: chats, messages, sources, projects, time span, model, size, secrets redacted."""
    settings = make_settings(ctx)
    with opened(settings, "read") as library:
        text = stats_text(library, as_json, redacting=settings.redact)
    click.echo(text)


COMMANDS: list[click.Command] = [search, recent, read, resume, stats]
