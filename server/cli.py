"""The `pastchats` command. What a user runs most and what only reads (`stats`, `recent`, `--help`,
their argument errors, and an import of a path that does not exist) is answered here without
importing click, pydantic-settings or LanceDB, which would be most of its run time; everything else,
and anything this parser is not sure of, goes to the click group (`server.cli_commands`), which
defines the command line.

The fast path accepts a strict subset of what the click group accepts (long options with `=` or a
separate value, `-nN`, flags, `-v` counts) and gives the same output and exit status; tests run both
on the same arguments. Help texts come from `server.cli_help_texts`, generated from the click group
(a test regenerates them), and are used only where click would print them at its full width.
"""

from __future__ import annotations

import os
import sys

from server.cli_options import Fallback, split_options
from storage.errors import PastchatsError

TYPE_CHECKING = False  # not typing's: importing `typing` costs about a bare interpreter start
if TYPE_CHECKING:  # imported where used: `--help` and argument errors do without them (start-up speed)
    import sqlite3
    from datetime import datetime
    from typing import Literal

    from server.settings_quick import QuickValues

PROG = "pastchats"
RECENT_INTS = {"-n": (1, 20)}
RECENT_CHOICES = {"--sort-order": ("asc", "desc")}
RECENT_TIMES = ("--before", "--after")
RECENT_TEXTS = ("--project",)


class Values:
    """A command's option values, as click would pass them."""

    def __init__(self) -> None:
        self.n = 3
        self.sort_order: Literal["asc", "desc"] = "desc"
        self.before: datetime | None = None
        self.after: datetime | None = None
        self.project: str | None = None
        self.as_json = False
        # `import`
        self.paths: list[str] = []
        self.import_format: str | None = None
        # `read`
        self.uri = ""
        self.offset = 0
        self.limit = 40
        self.around: str | None = None
        # `export`
        self.out = "-"
        self.source: str | None = None
        self.format: Literal["jsonl", "json"] = "jsonl"


class ArgumentProblem(PastchatsError):
    """A value click would refuse: the same message, the same exit status (2)."""

    def __init__(self, command: str, message: str, usage: str = "[OPTIONS]"):
        super().__init__(message)
        self.command = command
        self.usage = usage


def program_name() -> str:
    """The name click shows in usage lines (its own rule: `python -m ...` when run as a module)."""
    package = getattr(sys.modules["__main__"], "__package__", None)
    return os.path.basename(sys.argv[0]) if package in (None, "") else ""


def help_width_is_clicks_full_width() -> bool:
    """Whether click would wrap help at its widest (78 columns): the width the stored texts have."""
    from server.settings_quick import terminal_columns

    return terminal_columns() >= 80


class GlobalOptions:
    def __init__(self) -> None:
        self.home: str | None = None
        self.model: str | None = None
        self.verbose = 0


def parse_global(argv: list[str]) -> tuple[GlobalOptions, str, list[str]]:
    options = GlobalOptions()
    rest = list(argv)
    while rest and rest[0].startswith("-"):
        token = rest.pop(0)
        name, eq, value = token.partition("=")
        if name in ("--home", "--model"):
            if not eq:
                if not rest:
                    raise Fallback
                value = rest.pop(0)
            if not value or value.startswith("-"):
                raise Fallback
            if name == "--home":
                options.home = value
            else:
                options.model = value
        elif token == "--verbose" or (len(token) > 1 and set(token[1:]) == {"v"}):
            options.verbose += 1 if token == "--verbose" else len(token) - 1
        else:
            raise Fallback
    if not rest:
        raise Fallback
    return options, rest[0], rest[1:]


def answer_help(argv: list[str]) -> bool:
    """Print a stored help text when click would print exactly it."""
    if not argv or argv[-1] not in ("-h", "--help") or len(argv) > 2:
        return False
    from server.cli_help_texts import HELP  # deferred: ~0.01 s, for help alone

    key = None
    if len(argv) == 1:
        key = ""
    elif argv[0] in HELP:
        key = argv[0]
    if key is None or program_name() != PROG or not help_width_is_clicks_full_width():
        return False
    sys.stdout.write(HELP[key] + "\n")
    sys.stdout.flush()
    return True


def check_recent(options: list[tuple[str, str | None]]) -> Values:
    """The recent command's values, converted and checked as click does, in command-line order."""
    values = Values()
    for name, raw in options:
        if name in RECENT_INTS:
            assert raw is not None
            if not (raw.isascii() and raw.isdigit()):
                raise Fallback
            low, high = RECENT_INTS[name]
            if not low <= int(raw) <= high:
                raise ArgumentProblem(
                    "recent", f"Invalid value for '{name}': {int(raw)} is not in the range {low}<=x<={high}."
                )
            values.n = int(raw)
        elif name in RECENT_CHOICES:
            if raw not in RECENT_CHOICES[name]:
                choices = ", ".join(repr(c) for c in RECENT_CHOICES[name])
                raise ArgumentProblem("recent", f"Invalid value for '{name}': {raw!r} is not one of {choices}.")
            values.sort_order = "asc" if raw == "asc" else "desc"
        elif name in RECENT_TIMES:
            from storage.times import parse_iso  # deferred: datetime, for the commands given a time

            parsed = parse_iso(str(raw))
            if parsed is None:
                raise ArgumentProblem(
                    "recent",
                    f"Invalid value for '{name}': {raw!r} is not an ISO 8601 date or time "
                    "(e.g. 2025-01-20 or 2025-01-20T10:00Z)",
                )
            if name == "--before":
                values.before = parsed
            else:
                values.after = parsed
        elif name in RECENT_TEXTS:
            values.project = raw
        else:
            values.as_json = True
    return values


def whole(raw: str | None, low: int, high: int | None) -> int:
    """A whole number click's IntRange would take as it is; anything else is for click to word."""
    if raw is None or not (raw.isascii() and raw.isdigit()) or int(raw) < low or (high is not None and int(raw) > high):
        raise Fallback
    return int(raw)


def check_read(tokens: list[str]) -> Values:
    values = Values()
    uris: list[str] = []
    for name, raw in split_options(tokens, {"--offset", "--limit", "--around"}, {"--json"}, uris):
        if name == "--offset":
            values.offset = whole(raw, 0, None)
        elif name == "--limit":
            values.limit = whole(raw, 1, 100)
        elif name == "--around":
            values.around = raw
        else:
            values.as_json = True
    if len(uris) != 1:
        raise Fallback
    values.uri = uris[0]
    return values


def check_export(tokens: list[str]) -> Values:
    values = Values()
    for name, raw in split_options(tokens, {"--out", "--project", "--source", "--format"}, set()):
        assert raw is not None
        if name == "--out":
            values.out = raw
        elif name == "--project":
            values.project = raw
        elif name == "--source":
            values.source = raw
        elif raw in ("jsonl", "json"):
            values.format = "json" if raw == "json" else "jsonl"
        else:
            raise Fallback
    return values


def check_import(tokens: list[str]) -> Values:
    """`import`'s paths and format, the format checked as click's choice checks it."""
    values = Values()
    options = split_options(tokens, {"--format"}, {"--sample", "--json"}, values.paths)
    formats = [raw for name, raw in options if name == "--format"]
    if len(formats) > 1 or not values.paths:
        raise Fallback  # click's own reading (the last one wins) and its usage error
    if formats:
        from importers.registry import names

        if formats[0] not in names():
            choices = ", ".join(repr(name) for name in names())
            message = f"Invalid value for '--format': {formats[0]!r} is not one of {choices}."
            raise ArgumentProblem("import", message, "[OPTIONS] [PATHS]...")
        values.import_format = formats[0]
    return values


def shown_path(token: str) -> str:
    """The path as click's `Path(path_type=Path)` gives it to the command (`str(pathlib.Path(token))`),
    without importing pathlib when the token is already in that form."""
    parts = token.split("/")
    if all(part not in ("", ".") for part in parts[1:]) and parts[0] != "." and not token.startswith("//"):
        return token
    from pathlib import Path

    return str(Path(token))


def import_problem(options: GlobalOptions, values: Values) -> int | None:
    """`import`'s answer when a path is missing, unreadable or not in the format named (what
    `importers.registry.choose` says, in the same words, before the store or the model loads); None
    when every path is fine (the click group imports) or the settings need the full reader."""
    from server.settings_quick import quick_values

    if options.home is not None and os.path.exists(options.home) and not os.path.isdir(options.home):
        return None  # click refuses a file as --home, in its words
    settings = quick_values(home=options.home, model=options.model)
    if settings is None or settings.log_file is not None:  # a log file is created even when nothing logs
        return None
    for token in values.paths:
        shown = shown_path(token)
        problem = None
        if not os.path.exists(shown):
            problem = f"{shown} does not exist"  # as importers.registry says it
        else:
            from pathlib import Path

            from importers.registry import choose
            from storage.errors import SourceError

            try:
                choose(Path(shown), values.import_format)
            except SourceError as exc:
                problem = str(exc)
        if problem is not None:
            from server.cli_quick import echo

            echo(f"Error: {problem}", err=True)
            return 1
    return None


def fast(argv: list[str]) -> int | None:
    """The exit status, when answered here; None when the click group must answer."""
    if sys.platform == "win32" or (sys.stdout.encoding or "").lower().replace("_", "-") not in ("utf-8", "utf8"):
        return None  # click re-wraps or colours streams there; it answers
    try:
        if answer_help(argv):
            return 0
        options, command, rest = parse_global(argv)
        if command == "stats":
            values = Values()
            values.as_json = bool(split_options(rest, set(), {"--json"}))
        elif command == "recent":
            valued = {*RECENT_INTS, *RECENT_CHOICES, *RECENT_TIMES, *RECENT_TEXTS}
            values = check_recent(split_options(rest, valued, {"--json"}))
        elif command == "import":
            return import_problem(options, check_import(rest))
        elif command == "read":
            values = check_read(rest)
        elif command == "export":
            values = check_export(rest)
        elif command in ("delete", "forget"):
            from server.cli_delete import answer  # commits the delete; a process of its own finishes it

            return answer(command, rest, home=options.home, model=options.model, verbose=options.verbose)
        else:
            return None
        lean = command in ("stats", "read", "export") or (command == "recent" and not values.as_json)
        if lean and (status := lean_answer(command, options, values)) is not None:
            return status
        return run(command, options, values)
    except Fallback:
        return None
    except ArgumentProblem as problem:
        prog = program_name()
        if prog != PROG:
            return None
        sys.stderr.write(
            f"Usage: {prog} {problem.command} {problem.usage}\nTry '{prog} {problem.command} --help' for help.\n\n"
            f"Error: {problem}\n"
        )
        return 2


def lean_catalog(options: GlobalOptions) -> tuple[str, QuickValues, sqlite3.Connection] | None:
    """The store's path as `stats` prints it, the settings and the current catalog, read with the
    standard library's cheapest parts (`storage.catalog_read`); None: `run` answers."""
    from server.settings_quick import path_text, quick_values
    from storage.catalog_read import open_current

    home = options.home
    if home is not None and os.path.exists(home) and not os.path.isdir(home):
        return None
    settings = quick_values(home=home, model=options.model)
    if settings is None or settings.log_file is not None:  # a log file is created even when nothing logs
        return None
    shown = path_text(settings.home)
    connection = None if shown is None else open_current(shown)
    if shown is None or connection is None:
        return None
    return shown, settings, connection


def lean_answer(command: str, options: GlobalOptions, values: Values) -> int | None:
    """`stats` (text), `recent` (text), `read` and `export` from a current catalog, without pathlib,
    logging or pydantic (`stats` also without json, re, typing or datetime); None: `run` answers."""
    from server.cli_quick import echo

    if command == "stats" and values.as_json:
        return None
    found = lean_catalog(options)
    if found is None:
        return None
    home, settings, connection = found
    if command == "export":
        from server.cli_read import export_to

        try:
            return export_to(connection, values)  # writes as it reads: never retried by `run` once begun
        finally:
            connection.close()
    text: str | None
    try:
        if command == "read":
            from server.cli_read import read_text

            text = read_text(
                connection,
                values.uri,
                offset=values.offset,
                limit=values.limit,
                around=values.around,
                budget=settings.output_budget_chars,
                as_json=values.as_json,
            )
        elif command == "stats":
            from server.cli_quick import stats_lines
            from storage.catalog_read import LeanStats

            info = LeanStats(home, connection, settings.model)
            if info.model is None:
                from storage.defaults import DEFAULT_MODEL

                info.model = DEFAULT_MODEL
            text = stats_lines(info)
        else:
            from server.cli_recent import recent_text

            text = recent_text(
                connection,
                settings.output_budget_chars,
                n=values.n,
                sort_order=values.sort_order,
                before=values.before,
                after=values.after,
                project=values.project,
            )
    except Exception:  # unreadable after all: `run` answers, or the click group words the error
        return None
    finally:
        connection.close()
    if text is None:
        return None
    echo(text)
    return 0


def run(command: str, options: GlobalOptions, values: Values) -> int | None:
    from pathlib import Path

    from server.cli_quick import echo, export_catalog, read_text, recent_text, stats_text
    from server.logs import configure_logging
    from server.settings_quick import quick_settings
    from storage.catalog import Catalog

    home = options.home
    if home is not None and os.path.exists(home) and not os.path.isdir(home):
        return None  # click refuses a file as --home, in its words
    settings = quick_settings(
        home=Path(home) if home is not None else None,
        model=options.model,
        log_level=None if options.verbose == 0 else "INFO" if options.verbose == 1 else "DEBUG",
    )
    if settings is None:
        return None
    configure_logging(settings)
    if command == "export":
        return export_catalog(settings.home.expanduser(), values)
    try:
        with Catalog.read(settings.home.expanduser(), settings.model_name()) as catalog:
            if catalog is None:
                return None  # the store itself answers (and rebuilds the catalog): the click group opens it
            if command == "read":
                text = read_text(
                    catalog,
                    values.uri,
                    offset=values.offset,
                    limit=values.limit,
                    around=values.around,
                    budget=settings.output_budget_chars,
                    as_json=values.as_json,
                )
            elif command == "stats":
                text = stats_text(catalog, values.as_json)
            else:
                text = recent_text(
                    catalog,
                    settings.output_budget_chars,
                    n=values.n,
                    sort_order=values.sort_order,
                    before=values.before,
                    after=values.after,
                    project=values.project,
                    as_json=values.as_json,
                )
    except Exception:  # an error (an empty store, an unknown project): the click group words it, as always
        return None
    echo(text)
    return 0


def main() -> None:
    status = fast(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from server.cli_commands import cli

    cli()


if __name__ == "__main__":
    main()
