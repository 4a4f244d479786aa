"""`pastchats sync | reindex | delete | forget | export`: keeping the store in step with the machine, and the
user in control of what it holds. Registered on the main group by `server.cli` (`COMMANDS`)."""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Literal

import click

from server.cli_common import ISO, catalog_or_store, json_option, make_settings, opened


@click.command()
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Also sync this agent-log file or folder (e.g. a repository with Aider history). Repeatable.",
)
@json_option
@click.pass_context
def sync(ctx: click.Context, paths: tuple[Path, ...], as_json: bool) -> None:
    """Import what is new in the agent logs on this machine (Claude Code, Codex, Gemini CLI, Aider,
    Cursor), and keep a private copy of each log. Unchanged files are not read again."""

    from server.embedding import embed_with_progress  # deferred: pulls in lancedb (start-up speed)
    from server.importing import progress_reporter
    from server.wiring import syncer_for

    settings = make_settings(ctx)
    with opened(settings) as library:
        syncer = syncer_for(settings, library, paths)
        with progress_reporter(not as_json, "agent logs") as progress:
            report = syncer.run_once(progress, embed=False)
        if not report.not_run:
            embed_with_progress(library, show=not as_json)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report) | {"files_changed": report.files_changed}, indent=2))
        if report.not_run or report.files_failed:
            ctx.exit(1)
        return
    if report.not_run:
        raise click.ClickException(f"sync skipped: {report.not_run}")
    click.echo(report.text())
    if report.files_failed:  # the rest was imported, but a failure must not look like success to a script
        ctx.exit(1)


@click.command()
@json_option
@click.pass_context
def reindex(ctx: click.Context, as_json: bool) -> None:
    """Rebuild the store from the private copies sync keeps of the agent logs (`<home>/archive`), as
    if read from the original files: links and projects are the originals', even for logs the agents
    have since deleted. Chats you deleted stay deleted; unchanged chats are not embedded again."""
    from importers.sources.reindex import Reindexer  # deferred: pulls in lancedb (start-up speed)
    from server.importing import progress_reporter
    from server.wiring import exclusions_from

    settings = make_settings(ctx)
    with opened(settings) as library:
        reindexer = Reindexer(library, home=settings.user_home, exclusions=exclusions_from(settings))
        with progress_reporter(not as_json, "the archive") as progress:
            report = reindexer.run(progress)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        if report.not_run:
            ctx.exit(1)
        return
    if report.not_run:
        raise click.ClickException(f"reindex skipped: {report.not_run}")
    click.echo(report.text())


@click.command()
@click.argument("uris", nargs=-1, required=True)
@json_option
@click.pass_context
def delete(ctx: click.Context, uris: tuple[str, ...], as_json: bool) -> None:
    """Delete chats (by uri, as search and recent show them) from every index and from the archive.
    Sync will not bring them back; `pastchats import FILE` does, deliberately."""
    # deferred: these pull in lancedb (start-up speed)
    from importers.sources.privacy import delete as delete_chats

    settings = make_settings(ctx)
    with opened(settings, model=False) as library:
        deleted = delete_chats(library, uris)
    missing = [uri for uri in uris if uri not in deleted]
    if as_json:
        click.echo(json.dumps({"deleted": deleted, "not_found": missing}, indent=2))
    elif deleted:
        click.echo(f"Deleted {len(deleted)} chat(s) from every index and the archive.")
    if missing and not as_json:
        click.echo(f"No chat with uri: {', '.join(missing)}", err=True)
    if not deleted:
        ctx.exit(1)


@click.command()
@click.option("--project", help="Chats in this project or workspace.")
@click.option(
    "--source", help="Chats from this source (claude, chatgpt, claude-code, codex, gemini, aider, cursor, ...)."
)
@click.option("--before", type=ISO, help="Chats last updated before this date (ISO 8601).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def forget(
    ctx: click.Context, project: str | None, source: str | None, before: datetime | None, yes: bool, as_json: bool
) -> None:
    """Delete every chat matching all the given criteria, from every index and from the archive."""
    # deferred: these pull in lancedb (start-up speed)
    from importers.sources.privacy import delete as delete_chats
    from importers.sources.privacy import matching

    if project is None and source is None and before is None:
        raise click.UsageError("say what to forget: --project, --source and/or --before")
    settings = make_settings(ctx)
    with opened(settings, model=False) as library:
        ids = matching(library, project=project, source=source, before=before)
        if ids and not yes:
            click.confirm(f"Delete {len(ids)} chat(s) from every index and the archive?", abort=True, err=True)
        deleted = delete_chats(library, ids) if ids else []
    if as_json:
        click.echo(json.dumps({"deleted": deleted}, indent=2))
    else:
        click.echo(
            f"Deleted {len(deleted)} chat(s) from every index and the archive." if deleted else "Nothing matched."
        )


@click.command()
@click.option("--out", default="-", show_default=True, help="File to write, or - for standard output.")
@click.option("--project", help="Only chats in this project or workspace.")
@click.option("--source", help="Only chats from this source.")
@click.option("--format", "format_", type=click.Choice(["jsonl", "json"]), default="jsonl", show_default=True)
@click.pass_context
def export(
    ctx: click.Context, out: str, project: str | None, source: str | None, format_: Literal["jsonl", "json"]
) -> None:
    """Write chats in the plain pastchats format; `pastchats import` reads it back unchanged."""
    from storage.export import export as export_chats  # deferred: pulls in lancedb (start-up speed)

    settings = make_settings(ctx)
    with ExitStack() as stack:
        library = catalog_or_store(settings, stack)  # the catalog when current: no LanceDB
        if out == "-":
            count = export_chats(library, sys.stdout, project=project, source=source, format=format_)
        else:
            try:
                with open(out, "w", encoding="utf-8") as handle:
                    count = export_chats(library, handle, project=project, source=source, format=format_)
            except OSError as exc:
                raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(f"Exported {count} chat(s) to {'standard output' if out == '-' else out}.", err=True)


COMMANDS: list[click.Command] = [sync, reindex, delete, forget, export]
__all__ = ["COMMANDS"]
