"""Progress on stderr for long work (import, sync, embedding): done/total, elapsed time and an ETA.

On a terminal a live bar, redrawn several times a second; otherwise (a log file, a CI job, a pipe) a
plain line every few seconds and one at the end. Both are driven by the clock, not by the work: a
ticker thread redraws (and asks `poll` for counts that moved since the last report) while the work
runs, so a long batch, a compaction or an index build is never silent. Never on stdout.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# A callback taking (done, total); total None when it is not known yet.
Report = Callable[[int, "int | None"], None]
# Counts that moved between reports (e.g. passages the model has embedded within a batch), read by the ticker.
Poll = Callable[[], "tuple[int, int | None]"]

PLAIN_EVERY_SECONDS = 5.0
TERMINAL_EVERY_SECONDS = 0.5  # the bar redraws itself; this is how often `poll` is read for it


def clock_text(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def eta_text(done: int, total: int | None, elapsed: float) -> str:
    if not total or done <= 0 or done >= total:
        return ""
    return f", ETA {clock_text(elapsed / done * (total - done))}"


class PlainProgress:
    """Periodic lines: `embedding passages: 1200/5000 (24%), 0:42 elapsed, ETA 2:13`."""

    def __init__(self, label: str, unit: str, stream: TextIO, every: float = PLAIN_EVERY_SECONDS):
        self.label, self.unit, self.stream, self.every = label, unit, stream, every
        self.start = time.monotonic()
        self.last_line = self.start
        self.done = 0
        self.total_known: int | None = None
        self.printed = ""
        self._lock = threading.Lock()  # the work's thread and the ticker both report

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        if self.total_known:
            share = f" ({100 * self.done // self.total_known}%), {clock_text(elapsed)} elapsed"
            eta = eta_text(self.done, self.total_known, elapsed)
            return f"{self.label}: {self.done}/{self.total_known} {self.unit}{share}{eta}"
        if not self.done:  # work that counts nothing (yet): how long it has taken
            return f"{self.label}: {clock_text(elapsed)} elapsed"
        return f"{self.label}: {self.done} {self.unit}, {clock_text(elapsed)} elapsed"

    def update(self, done: int, total: int | None) -> None:
        with self._lock:
            self.done, self.total_known = max(done, self.done), total if total is not None else self.total_known
        self.tick()

    def tick(self) -> None:
        """A line when `every` seconds have passed since the last one, whether or not the counts moved."""
        with self._lock:
            now = time.monotonic()
            if now - self.last_line >= self.every:
                self.last_line = now
                self._print()

    def finish(self) -> None:
        with self._lock:
            if self.done and self._counts(self.line()) != self._counts(self.printed):
                self._print()

    @staticmethod
    def _counts(line: str) -> str:
        return line.split(", ", 1)[0]

    def _print(self) -> None:
        self.printed = self.line()
        print(self.printed, file=self.stream, flush=True)


class Ticker:
    """Calls `tick` every `every` seconds on its own thread until stopped."""

    def __init__(self, every: float, tick: Callable[[], None]):
        self._every, self._tick = every, tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pastchats-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._tick()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def progress(
    label: str,
    unit: str,
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
    poll: Poll | None = None,
    every: float | None = None,
) -> Iterator[Report | None]:
    """Yields an update callback (or None when disabled). A bar on a terminal, plain lines elsewhere
    (`every` seconds apart, default `PLAIN_EVERY_SECONDS`); `poll`, if given, is read by the ticker
    between the work's own reports (it runs on the ticker's thread: it must only read counts)."""
    out = stream if stream is not None else sys.stderr
    if not enabled:
        yield None
        return
    if not out.isatty():
        plain = PlainProgress(label, unit, out, every if every is not None else PLAIN_EVERY_SECONDS)

        def plain_tick() -> None:
            if poll is not None:
                plain.update(*poll())
            else:
                plain.tick()

        ticker = Ticker(min(plain.every / 10, 0.5), plain_tick)  # a line at most a tenth late
        try:
            yield plain.update
        finally:
            ticker.stop()
        plain.finish()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit))
    times = (TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, *times, console=Console(file=out), transient=True) as bar:
        task = bar.add_task(label, total=None)
        shown = [0]

        def update(done: int, total: int | None) -> None:
            shown[0] = max(done, shown[0])
            bar.update(task, completed=shown[0], total=total)

        ticker = Ticker(every or TERMINAL_EVERY_SECONDS, lambda: update(*poll()) if poll is not None else None)
        try:
            yield update
        finally:
            ticker.stop()
