"""`pastchats import | sync | reindex | delete | forget | export`: bringing chats in, keeping the store in
step with the machine, and the user in control of what it holds."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

import click

from server.cli.common import (
    PROJECT_HELP,
    WHEN,
    WHEN_HELP,
    json_option,
    known_names,
    make_settings,
    opened,
    quiet_option,
)
from storage.embedding.model_files import install_hint
from storage.owner_only import open_private

if TYPE_CHECKING:
    from collections.abc import Iterable

    from server.settings import Settings
    from storage.errors import SharedStoreUnreachable
    from storage.library import Library
    from storage.models import Conversation
    from storage.writing.exchange import ExchangeReport


class FormatChoice(click.Choice[str]):
    """The importers' format names, read from the registry only when shown or checked: importing the
    importers (and pydantic with them) would slow down every `--help` and argument error."""

    def __init__(self) -> None:  # click's sets `choices`, which is read from the registry here
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from importers import registry

        return tuple(registry.names())


@click.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "format_", type=FormatChoice(), help="Skip detection.")
@click.option("--sample", is_flag=True, help="Import the bundled sample chats, to try pastchats out.")
@quiet_option
@json_option
@click.pass_context
def import_(
    ctx: click.Context, paths: tuple[Path, ...], format_: str | None, sample: bool, quiet: bool, as_json: bool
) -> None:
    """Import chat histories: exports, logs, or plain JSON. Re-importing is always safe.

    Without an embedding model the chats are imported all the same, keyword-searchable at once; their
    passages are embedded once a model is installed (`pastchats model install`).
    """
    if not paths and not sample:
        raise click.UsageError("pass one or more files or folders to import, or --sample")
    from importers import registry
    from importers.base import SourceError
    from server.services.sync import exclusions_from

    settings = make_settings(ctx)
    for path in paths:  # a wrong path or format fails here, before the store and the model load
        try:
            registry.choose(path, format_)
        except SourceError as exc:
            raise click.ClickException(str(exc)) from None
    from server.services.embedding import embed_with_progress
    from server.services.importing import import_source, sample_path, summary_text, totals

    with ExitStack() as stack:
        sources: list[tuple[Path, str | None, str | None]] = [(path, format_, None) for path in paths]
        if sample:
            sources.append((stack.enter_context(sample_path()), None, "sample chats"))
        library = stack.enter_context(opened(settings, "write"))
        exclusions = exclusions_from(settings)
        show = not (quiet or as_json)
        summaries = [import_source(library, path, fmt, show, label, exclusions) for path, fmt, label in sources]
        embed_with_progress(library, show=show)
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
                f"model is installed: {install_hint()}"
            )


@click.command()
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Also sync this agent-log file or folder (e.g. a repository with Aider history). Repeatable.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep going: sync what the agents write as they write it, until Ctrl-C (one process per store "
    "watches; a running `pastchats serve` may already be doing it).",
)
@quiet_option
@json_option
@click.pass_context
def sync(ctx: click.Context, paths: tuple[Path, ...], watch: bool, quiet: bool, as_json: bool) -> None:
    """Import what is new in this machine's coding-agent logs, keeping a private copy of each.

    The agents are Claude Code, Codex, Gemini CLI, Aider, Cursor and its agent, Copilot Chat, Cline, Roo
    Code, Kilo Code, OpenCode, Qwen Code, Continue, Crush, Goose, Zed, Amazon Q Developer CLI, Kiro CLI,
    pi, Kimi CLI, Kimi Code and OpenHands. Unchanged files are not read again. With --watch it keeps going,
    syncing each burst of writes.
    """
    from server.services.embedding import embed_with_progress
    from server.services.importing import progress_reporter
    from server.services.sync import syncer_for

    settings = make_settings(ctx)
    if watch:
        watch_logs(settings, paths, quiet, as_json)
        return
    shared: ExchangeReport | None = None
    unreachable: SharedStoreUnreachable | None = None
    with opened(settings, "write") as library:
        syncer = syncer_for(settings, library, paths)
        with progress_reporter(not (quiet or as_json), "agent logs") as progress:
            report = syncer.run_once(progress, embed=False)
        if not report.not_run:
            if library.shared is not None:
                shared, unreachable = _exchange(library, show=not (quiet or as_json))
            embed_with_progress(library, show=not (quiet or as_json))
    if as_json:
        extra: dict[str, object] = {"files_changed": report.files_changed}
        if settings.store_uri:
            extra["shared"] = dataclasses.asdict(shared) if shared else {"unreachable": str(unreachable)}
        click.echo(json.dumps(dataclasses.asdict(report) | extra, indent=2))
        if report.not_run or report.files_failed or unreachable:
            ctx.exit(1)
        return
    if report.not_run:
        raise click.ClickException(f"sync skipped: {report.not_run}")
    click.echo(report.text())
    if shared is not None:
        click.echo(shared.text())
    if unreachable is not None:
        raise click.ClickException(str(unreachable))
    if report.files_failed:  # the rest was imported, but a failure must not look like success to a script
        ctx.exit(1)


def _exchange(library: Library, *, show: bool) -> tuple[ExchangeReport | None, SharedStoreUnreachable | None]:
    """After a sync, this machine's chats sent to the shared store and the other machines' brought; an
    unreachable store leaves this machine's sync standing, and the next one sends it."""
    from importers.sources.sync_state import forgotten
    from server.services.importing import progress_reporter
    from storage.errors import SharedStoreUnreachable

    try:
        with progress_reporter(show, "the shared store") as progress:
            return library.exchange(progress=progress, wait=0, forgotten=forgotten(library.home)), None
    except SharedStoreUnreachable as exc:
        return None, exc


def watch_logs(settings: Settings, paths: tuple[Path, ...], quiet: bool, as_json: bool) -> None:
    """`sync --watch`: follow the agent logs until Ctrl-C; a line on stderr (or a JSON record on stdout)
    for each sync that changed something, and the watcher's state unless quiet."""
    import threading

    from importers.sources.report import SyncReport
    from server.services.sync.watching import Watcher

    def said(text: str) -> None:
        if not quiet:
            click.echo(f"pastchats: {text}; Ctrl-C stops", err=True)

    def synced(report: SyncReport) -> None:
        if not (report.files_changed or report.files_failed):
            return
        if as_json:
            click.echo(json.dumps(dataclasses.asdict(report) | {"files_changed": report.files_changed}))
        else:
            click.echo(report.text())

    stop = threading.Event()
    with opened(settings, "write") as library:
        watcher = Watcher(settings, library, extra_paths=paths, on_round=synced, on_state=said)
        try:
            watcher.run(stop)
        except KeyboardInterrupt:
            stop.set()


@click.command()
@quiet_option
@json_option
@click.pass_context
def reindex(ctx: click.Context, quiet: bool, as_json: bool) -> None:
    """Rebuild the store from the private copies of the agent logs that sync keeps.

    The copies (`<home>/archive`) are read as if they were the original files: links and projects are
    the originals', even for logs the agents have since deleted. Chats you deleted stay deleted;
    unchanged chats are not embedded again.
    """
    from importers.sources.reindex import Reindexer
    from server.services.importing import progress_reporter
    from server.services.sync import exclusions_from

    settings = make_settings(ctx)
    with opened(settings, "write") as library:
        reindexer = Reindexer(library, home=settings.user_home, exclusions=exclusions_from(settings))
        with progress_reporter(not (quiet or as_json), "the archive") as progress:
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
    """Delete chats by uri (as search and recent show them) from every index and the archive.

    Sync will not bring them back; `pastchats import FILE` does, deliberately.
    """
    from importers.sources.privacy import delete as delete_chats

    settings = make_settings(ctx)
    with opened(settings, "write-without-model") as library:
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
@click.option("--project", help=PROJECT_HELP)
@click.option(
    "--source", help="Chats from this source (claude, chatgpt, claude-code, codex, gemini, aider, cursor, ...)."
)
@click.option("--before", type=WHEN, help=f"Chats last updated before this time: {WHEN_HELP}.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def forget(
    ctx: click.Context, project: str | None, source: str | None, before: datetime | None, yes: bool, as_json: bool
) -> None:
    """Delete every chat matching all the given criteria, from every index and from the archive."""
    from importers.sources.privacy import delete as delete_chats
    from importers.sources.privacy import matching

    if project is None and source is None and before is None:
        raise click.UsageError("say what to forget: --project, --source and/or --before")
    settings = make_settings(ctx)
    with opened(settings, "write-without-model") as library:
        projects, source = known_names(library, project=project, source=source)
        ids = sorted(
            {
                cid
                for spelling in projects or [None]
                for cid in matching(library, project=spelling, source=source, before=before)
            }
        )
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
@click.option(
    "--out",
    default="-",
    show_default=True,
    help="File to write, or - for standard output; with --format markdown, a folder (existing, or ending "
    "in /) gets one file per chat.",
)
@click.option("--project", help=PROJECT_HELP)
@click.option("--source", help="Only chats from this source.")
@click.option(
    "--format",
    "format_",
    type=click.Choice(["jsonl", "json", "markdown"]),
    default="jsonl",
    show_default=True,
    help="jsonl and json: the plain format, which `pastchats import` reads back; markdown: to read.",
)
@click.pass_context
def export(
    ctx: click.Context,
    out: str,
    project: str | None,
    source: str | None,
    format_: Literal["jsonl", "json", "markdown"],
) -> None:
    """Write chats in the plain pastchats format (`pastchats import` reads it back unchanged), or as markdown."""
    from storage.reads.export import plain_record, write_records

    settings = make_settings(ctx)
    with opened(settings, "read") as library:
        projects, source = known_names(library, project=project, source=source)
        chats = (
            chat
            for spelling in projects or [None]
            for chat in library.iter_conversations(project=spelling, source=source)
        )
        try:
            if format_ == "markdown" and out != "-" and (out.endswith(("/", os.sep)) or Path(out).is_dir()):
                count = _markdown_files(Path(out), chats)
            else:
                with ExitStack() as stack:
                    # a new file is owner-only, like the store it comes from; an existing one keeps its mode
                    handle = (
                        sys.stdout
                        if out == "-"
                        else stack.enter_context(open(out, "w", encoding="utf-8", opener=open_private))
                    )
                    if format_ == "markdown":
                        count = _markdown_stream(handle, chats)
                    else:
                        count = write_records(handle, (plain_record(chat) for chat in chats), format_)
        except OSError as exc:
            raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(f"Exported {count} chat(s) to {'standard output' if out == '-' else out}.", err=True)


def _markdown_files(folder: Path, chats: Iterable[Conversation]) -> int:
    """Each chat as its own markdown file in `folder`; a chat exported again replaces its file."""
    from storage.reads.export import markdown, markdown_name

    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    taken: set[str] = set()
    count = 0
    for chat in chats:
        with open(folder / markdown_name(chat.id, taken), "w", encoding="utf-8", opener=open_private) as f:
            f.write(markdown(chat))
        count += 1
    return count


def _markdown_stream(handle: TextIO, chats: Iterable[Conversation]) -> int:
    """The chats as markdown, one after another, in one file."""
    from storage.reads.export import markdown

    count = 0
    for chat in chats:
        handle.write(("\n" if count else "") + markdown(chat))
        count += 1
    return count


COMMANDS: list[click.Command] = [import_, sync, reindex, delete, forget, export]
