"""What `stats` and `recent` print, from a catalog or a store: one body for both ways a command runs
(the click group in `server.cli_commands`, and the fast path in `server.cli` that answers without
importing click or pydantic-settings), so the two cannot print differently."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` alone costs about a bare interpreter start: the lean `stats` does without it
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path
    from typing import Literal, Protocol, TextIO

    from storage.catalog import Catalog
    from storage.library import Library
    from storage.recent import RecentSource, StoreStats

    class ExportValues(Protocol):
        @property
        def out(self) -> str: ...
        @property
        def project(self) -> str | None: ...
        @property
        def source(self) -> str | None: ...
        @property
        def format(self) -> Literal["jsonl", "json"]: ...

    class StatsSource(Protocol):
        def stats(self) -> StoreStats: ...

    class StatsLines(Protocol):
        """What `stats` prints (`StoreStats` gives it with `span` made from its dates)."""

        @property
        def home(self) -> object: ...
        @property
        def conversations(self) -> int: ...
        @property
        def messages(self) -> int: ...
        @property
        def chunks(self) -> int: ...
        @property
        def sources(self) -> dict[str, int]: ...
        @property
        def projects(self) -> dict[str, int]: ...
        @property
        def span(self) -> str: ...
        @property
        def model(self) -> str | None: ...
        @property
        def disk_bytes(self) -> int: ...
        @property
        def awaiting_embeddings(self) -> int: ...


def echo(text: str, *, err: bool = False) -> None:
    """`click.echo(text, err=err)`, for the fast path (which checks that stdout is UTF-8 text)."""
    stream = sys.stderr if err else sys.stdout
    out = text + "\n"
    if "\x1b" in out and not stream.isatty():
        import re  # deferred: only text holding an escape needs it

        # click.echo drops ANSI escapes when its stream is not a terminal
        out = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", out)
    stream.write(out)
    stream.flush()


class _Shown:
    """`StoreStats` with its dates as `stats` prints them."""

    def __init__(self, info: StoreStats):
        self.home, self.model, self.disk_bytes = info.home, info.model, info.disk_bytes
        self.conversations, self.messages, self.chunks = info.conversations, info.messages, info.chunks
        self.sources, self.projects = info.sources, info.projects
        self.awaiting_embeddings = info.awaiting_embeddings
        oldest, newest = info.oldest, info.newest
        self.span = f"{oldest:%Y-%m-%d} to {newest:%Y-%m-%d}" if oldest and newest else "empty"


def stats_text(source: StatsSource, as_json: bool) -> str:
    info = source.stats()
    if as_json:
        import dataclasses  # deferred: the text answer does without it
        import json

        return json.dumps(dataclasses.asdict(info), indent=2, default=str)
    return stats_lines(_Shown(info))


def stats_lines(info: StatsLines) -> str:
    """The text of `stats`: one body for the store, the catalog and the lean reader."""

    def counts(values: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(values.items(), key=lambda kv: -kv[1])) or "none"

    text = (
        f"Store: {info.home} ({info.disk_bytes / 1e6:.1f} MB)\n"
        f"Chats: {info.conversations} · messages {info.messages} · indexed passages {info.chunks}\n"
        f"Sources: {counts(info.sources)}\nProjects: {counts(info.projects)}\n"
        f"Time span: {info.span}\nModel: {info.model}"
    )
    if info.awaiting_embeddings:
        text += (
            f"\nAwaiting embeddings: {info.awaiting_embeddings} passage(s), keyword-searchable; "
            "`pastchats model install` embeds them."
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
    from tools import recent_listing  # deferred: the output models (start-up speed of `stats`, `--help`)

    output, text = recent_listing.recent(
        source, n=n, sort_order=sort_order, before=before, after=after, project=project, budget=budget
    )
    return output.model_dump_json(indent=2) if as_json else text


def read_text(
    catalog: Catalog, uri: str, *, offset: int, limit: int, around: str | None, budget: int, as_json: bool
) -> str:
    """The read_chat tool's answer from a current catalog (errors raise, and the click group words them)."""
    from typing import cast

    from tools import read_page  # deferred: the output models

    library = cast("Library", catalog)  # the catalog answers read_chat as the library does (`storage.reading`)
    output, text = read_page.read(library, uri, offset=offset, limit=limit, around=around, budget=budget)
    return output.model_dump_json(indent=2) if as_json else text


def export_catalog(home: Path, values: ExportValues) -> int | None:
    """`pastchats export` from a current catalog; None: the click group answers (from the store, or
    with its words for an error)."""
    from storage.catalog import Catalog
    from storage.export import export

    with Catalog.read(home) as catalog:
        if catalog is None:
            return None
        return export_out(
            values, lambda out: export(catalog, out, project=values.project, source=values.source, format=values.format)
        )


def export_out(values: ExportValues, write: Callable[[TextIO], int]) -> int | None:
    """Run `write` on standard output or `--out`'s file and say how many it wrote, as the click command
    does; None, before writing anything, when the file cannot be opened (click words that error)."""
    if values.out == "-":
        count = write(sys.stdout)
    else:
        try:
            handle = open(values.out, "w", encoding="utf-8")  # noqa: SIM115  # closed below, before the echo
        except OSError:
            return None
        with handle:
            count = write(handle)
    sys.stdout.flush()
    echo(f"Exported {count} chat(s) to {'standard output' if values.out == '-' else values.out}.", err=True)
    return 0
