"""What `stats` and `recent` print, from a catalog or a store: one body for both ways a command runs
(the click group in `server.cli_commands`, and the fast path in `server.cli` that answers without
importing click or pydantic-settings), so the two cannot print differently."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from storage.recent import RecentSource, StoreStats

# click.echo drops ANSI escapes when its stream is not a terminal; `echo` does the same.
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


class StatsSource(Protocol):
    def stats(self) -> StoreStats: ...


def echo(text: str, *, err: bool = False) -> None:
    """`click.echo(text, err=err)`, for the fast path (which checks that stdout is UTF-8 text)."""
    stream = sys.stderr if err else sys.stdout
    out = text + "\n"
    if "\x1b" in out and not stream.isatty():
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def stats_text(source: StatsSource, as_json: bool) -> str:
    info = source.stats()
    if as_json:
        import dataclasses  # deferred: the text answer does without it

        return json.dumps(dataclasses.asdict(info), indent=2, default=str)

    def counts(values: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(values.items(), key=lambda kv: -kv[1])) or "none"

    span = f"{info.oldest:%Y-%m-%d} to {info.newest:%Y-%m-%d}" if info.oldest and info.newest else "empty"
    text = (
        f"Store: {info.home} ({info.disk_bytes / 1e6:.1f} MB)\n"
        f"Chats: {info.conversations} · messages {info.messages} · indexed passages {info.chunks}\n"
        f"Sources: {counts(info.sources)}\nProjects: {counts(info.projects)}\n"
        f"Time span: {span}\nModel: {info.model}"
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
