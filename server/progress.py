"""Progress on stderr for long work (import, sync, embedding): done/total and an ETA.

On a terminal a live bar; otherwise (a log file, a CI job, a pipe) a plain line every few seconds and
one at the end, so that a long run is never silent and never floods. Never on stdout.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# A callback taking (done, total); total None when it is not known yet.
Report = Callable[[int, "int | None"], None]

PLAIN_EVERY_SECONDS = 5.0


def eta_text(done: int, total: int | None, elapsed: float) -> str:
    if not total or done <= 0 or done >= total:
        return ""
    remaining = elapsed / done * (total - done)
    minutes, seconds = divmod(int(remaining + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f", ETA {hours}:{minutes:02d}:{seconds:02d}" if hours else f", ETA {minutes}:{seconds:02d}"


class PlainProgress:
    """Periodic lines: `embedding passages: 1200/5000 (24%), ETA 3:10`."""

    def __init__(self, label: str, unit: str, stream: TextIO, every: float = PLAIN_EVERY_SECONDS):
        self.label, self.unit, self.stream, self.every = label, unit, stream, every
        self.start = time.monotonic()
        self.last_line = self.start
        self.done = 0
        self.total_known: int | None = None
        self.printed = ""

    def line(self) -> str:
        if self.total_known:
            share = f" ({100 * self.done // self.total_known}%)"
            eta = eta_text(self.done, self.total_known, time.monotonic() - self.start)
            return f"{self.label}: {self.done}/{self.total_known} {self.unit}{share}{eta}"
        return f"{self.label}: {self.done} {self.unit}"

    def update(self, done: int, total: int | None) -> None:
        self.done, self.total_known = done, total if total is not None else self.total_known
        now = time.monotonic()
        if now - self.last_line >= self.every:
            self.last_line = now
            self._print()

    def finish(self) -> None:
        if self.done and self.line() != self.printed:
            self._print()

    def _print(self) -> None:
        self.printed = self.line()
        print(self.printed, file=self.stream, flush=True)


@contextmanager
def progress(label: str, unit: str, *, enabled: bool = True, stream: TextIO | None = None) -> Iterator[Report | None]:
    """Yields an update callback (or None when disabled). A bar on a terminal, plain lines elsewhere."""
    out = stream if stream is not None else sys.stderr
    if not enabled:
        yield None
        return
    if not out.isatty():
        plain = PlainProgress(label, unit, out)
        yield plain.update
        plain.finish()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit))
    with Progress(*columns, TimeRemainingColumn(), console=Console(file=out), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield update
