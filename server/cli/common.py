"""What every `pastchats` command shares: settings from flags, the opened store, options, output."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from server.services.redacted import redaction_text
from storage.embedding.model_files import install_hint
from storage.errors import PastchatsError
from storage.safe_text import clean, clean_all
from storage.times import parse_iso

if TYPE_CHECKING:
    from pydantic import BaseModel

    from server.services.opening import Need
    from server.settings import Settings
    from storage.library import Library
    from storage.reads.listing import RecentSource

T = TypeVar("T")


WHEN_HELP = "a date (2025-01-20), a time (2025-01-20T10:00Z), or yesterday, 7d, 2w, last monday"
# A project is named by its path or by its folder's last name, as the agents' own UIs show it.
PROJECT_HELP = "Only chats in this project or workspace: its path, or its folder's name (e.g. vite)."


class WhenType(click.ParamType[datetime, Any]):
    """A time as people type it: ISO 8601 (2025-01-20, 2025-01-20T10:00Z) or relative to now
    (yesterday, 7d, 2w, 3 days ago, last monday), read by dateparser."""

    name = "date"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        parsed = parse_iso(str(value))
        if parsed is None:
            import dateparser  # ~0.2 s: paid only when a date is not ISO 8601

            # No fixed language: dateparser reads the short forms (2w, 7d) through its language detection.
            found = dateparser.parse(
                str(value), settings={"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": True}
            )
            parsed = found.astimezone(UTC) if found is not None else None
        if parsed is None:
            self.fail(f"{value!r} is not a date: give one as {WHEN_HELP}")
        return parsed


WHEN = WhenType()

json_option = click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
quiet_option = click.option("-q", "--quiet", is_flag=True, help="No progress on stderr; only the result.")


def make_settings(ctx: click.Context, **overrides: Any) -> Settings:
    """The one Settings object: command-line flags over environment over defaults."""
    # deferred, like every import a command needs but `--help` and argument errors do not
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from server.logs import configure_logging
    from server.settings import Settings

    given = {**ctx.ensure_object(dict), **overrides}
    try:
        settings = Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise click.ClickException(f"invalid setting: {problems}") from None
    except SettingsError as exc:  # a list or mapping variable that is not JSON
        raise click.ClickException(f"invalid setting: {exc}; lists and mappings are JSON, e.g. '[\"a\"]'") from None
    configure_logging(settings)
    return settings


class PastchatsGroup(click.Group):
    """The CLI's one translation of an expected failure (and of a tool's error, for the commands that
    answer as the tools do) into one line on stderr and exit status 1, never a traceback. Its help
    lists the commands in `sections`, each with its whole first line."""

    def __init__(self, *args: Any, sections: list[tuple[str, list[str]]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections or []

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, names in self.sections:
            rows = []
            for name in names:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())))
            with formatter.section(title):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PastchatsError as exc:
            raise click.ClickException(str(exc)) from None


def known_names(
    library: Library, *, project: str | None = None, source: str | None = None
) -> tuple[tuple[str, ...] | None, str | None]:
    """The one rule for a project or source the user types: matched case-insensitively against the
    store's, and one that names nothing fails with the ones there are (never an empty answer).
    Returns every stored spelling of the project, and the stored spelling of the source."""
    from storage.errors import UnknownProject

    try:
        projects = library.resolve_project(project)
    except UnknownProject as exc:
        raise click.ClickException(unknown_name("--project", "project", project or "", exc.known)) from None
    if source is None:
        return projects, None
    known = sorted(library.stats().sources, key=str.casefold)
    found = [name for name in known if name.casefold() == source.casefold()]
    if not found:
        raise click.ClickException(unknown_name("--source", "source", source, known))
    return projects, found[0]


def unknown_name(flag: str, kind: str, given: str, known: list[str]) -> str:
    listed = ", ".join(clean(name) for name in known[:30]) + (f" and {len(known) - 30} more" if len(known) > 30 else "")
    if not known:
        return f"{flag} {clean(given)!r}: no chat in the store has a {kind}; leave {flag} out"
    return f"{flag} {clean(given)!r} is not a known {kind}; known: {listed}. Pass one of them, or leave {flag} out"


@contextmanager
def opened(settings: Settings, need: Need) -> Iterator[Library]:
    """The store, opened as the command needs it (`server.services.opening.open_store`); a writer
    waiting for another process's write says so plainly, not as a log line."""
    from server.services.opening import open_store

    library = open_store(settings, need)
    if need.startswith("write"):
        library.lock.on_wait = lambda notice: click.echo(notice, err=True)
    try:
        yield library
    finally:
        library.close()


def as_tool(name: str, work: Callable[[], T]) -> T:
    """Run a tool body as the MCP server does, for a person: its result and errors read as the model's,
    with the commands that are the next step where the model is offered tool calls."""
    from tools.errors import guarded
    from tools.voice import for_a_person

    try:
        with for_a_person():
            return guarded(name, work)
    except Exception as exc:
        # A failing tool body raises the SDK's ToolError, which imports the SDK then: the class is
        # looked up only here, so that a command that succeeds never loads the SDK.
        from mcp.server.mcpserver.exceptions import ToolError

        if isinstance(exc, ToolError):
            raise click.ClickException(str(exc)) from None
        raise


def emit(output: BaseModel, text: str, as_json: bool) -> None:
    click.echo(json_text(output.model_dump(mode="json")) if as_json else text)


def json_text(value: Any) -> str:
    """What `--json` prints: every string cleaned as the tools' text is (`storage.safe_text`), so what
    reaches a terminal, or a pipe into `jq -r`, cannot act on it."""
    return json.dumps(clean_all(value), indent=2, ensure_ascii=False, default=str)


def stats_text(source: Library, as_json: bool, *, redacting: bool = True) -> str:
    """`redacting`: whether secrets are redacted as chats are written (`PASTCHATS_REDACT`)."""
    from server.services.sync.watching import watch_status

    info = source.stats()
    watcher = watch_status(info.home)
    if as_json:
        watching = dataclasses.asdict(watcher) if watcher else None
        return json_text(dataclasses.asdict(info) | {"redaction": redacting, "watcher": watching})

    def counts(values: dict[str, int]) -> str:
        """Projects and sources are chat data: cleaned as chat text is."""
        return ", ".join(f"{clean(k)} {v}" for k, v in sorted(values.items(), key=lambda kv: -kv[1])) or "none"

    span = f"{info.oldest:%Y-%m-%d} to {info.newest:%Y-%m-%d}" if info.oldest and info.newest else "empty"
    text = (
        f"Store: {info.home} ({info.disk_bytes / 1e6:.1f} MB)\n"
        f"Chats: {info.conversations} · messages {info.messages} · indexed passages {info.chunks}\n"
        f"Sources: {counts(info.sources)}\nProjects: {counts(info.projects)}\n"
        f"Time span: {span}\nModel: {info.model}"
    )
    text += "\n" + redaction_text(info.redacted, redacting)
    text += f"\nWatching the agent logs: {watcher.text() if watcher else 'no process now'}"
    if info.awaiting_embeddings:
        text += (
            f"\nAwaiting embeddings: {info.awaiting_embeddings} passage(s), keyword-searchable; to embed them: "
            f"{install_hint()}"
        )
    return text


def recent_text(
    source: RecentSource,
    budget: int,
    *,
    n: int,
    sort_order: Literal["asc", "desc"],
    before: datetime | None,
    after: datetime | None,
    project: str | None,
    as_json: bool,
) -> str:
    """The recent_chats tool's answer, run as the server runs it (errors raise as the tool's)."""
    from tools import recent_chats

    output, text = recent_chats.recent(
        source, n=n, sort_order=sort_order, before=before, after=after, project=project, budget=budget
    )
    return json_text(output.model_dump(mode="json")) if as_json else text
