"""`pastchats delete URI...` and `pastchats forget ... --yes`, answered without LanceDB.

Removing a chat's rows from LanceDB, the keyword index and the archive needs LanceDB (~1 s to
import). What the user waits for needs only the catalog and the journal: under the write lock
(`storage.lean_lock`), the chats to delete are looked up in the catalog and committed to the
journal's `deleting` list, the point of no return (`storage.locks`). From then on no reader shows
them (`storage.journal.DeletedWatch`), and whoever next holds the write lock removes them; a
detached process started here does so at once (`finish`, this module run as a script), and if it
dies the next command or server finishes the job.

The output and the exit status are the click commands' (`server.cli_data`); whatever this module
is not sure of (a uri the catalog does not hold, a stale catalog, a question to confirm, logging)
goes to them, which delete in the foreground as before.
"""

from __future__ import annotations

import os
import sys

from server.cli_options import Fallback, split_options

TYPE_CHECKING = False  # not typing's (start-up speed)
if TYPE_CHECKING:
    import sqlite3

# What the finisher needs of the environment: finding Python and its packages, and a locale.
KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
STATE_FILE = "sync-state.json"  # importers.sources.sync_state.STATE_FILE (pydantic: not imported here)
FOUND = "Deleted {} chat(s) from every index and the archive."


class Request:
    def __init__(self) -> None:
        self.uris: list[str] = []
        self.project: str | None = None
        self.source: str | None = None
        self.before_us: int | None = None
        self.yes = False
        self.as_json = False


def parse(command: str, tokens: list[str]) -> Request:
    request = Request()
    if command == "delete":
        for _ in split_options(tokens, set(), {"--json"}, request.uris):
            request.as_json = True
        if not request.uris:
            raise Fallback
        return request
    for name, raw in split_options(tokens, {"--project", "--source", "--before"}, {"--yes", "--json"}):
        if name == "--project":
            request.project = raw
        elif name == "--source":
            request.source = raw
        elif name == "--before":
            request.before_us = microseconds(str(raw))
        elif name == "--yes":
            request.yes = True
        else:
            request.as_json = True
    if request.project is None and request.source is None and request.before_us is None:
        raise Fallback  # click's usage error
    return request


def microseconds(text: str) -> int:
    """`--before` as the catalog stores times (naive UTC microseconds), bounded as `Filters` bounds it."""
    from datetime import datetime, timedelta

    from storage.times import clamp, naive_utc, parse_iso

    parsed = parse_iso(text)
    if parsed is None:
        raise Fallback  # click words the error
    return (naive_utc(clamp(parsed)) - datetime(1970, 1, 1)) // timedelta(microseconds=1)


def answer(command: str, tokens: list[str], *, home: str | None, model: str | None, verbose: int) -> int | None:
    """The exit status, when answered here; None: the click group answers (and deletes). `home`,
    `model`, `verbose`: the global options as `server.cli` read them."""
    from server.settings_quick import path_text, quick_values

    try:
        request = parse(command, tokens)
    except Fallback:
        return None
    if verbose or (home is not None and os.path.exists(home) and not os.path.isdir(home)):
        return None  # what the full path logs, or refuses in click's words
    settings = quick_values(home=home, model=model)
    store = None if settings is None or settings.log_file is not None else path_text(settings.home)
    if store is None or not os.path.isdir(store):
        return None
    found = commit(store, request)
    if found is None:
        return None
    if found:
        start_finisher(os.path.abspath(store))  # it runs elsewhere: a relative --home would name another place
    return show(command, request, found)


def commit(home: str, request: Request) -> list[str] | None:
    """Under the write lock: the chats to delete, committed to the journal (None: the full path answers)."""
    from storage import lean_lock
    from storage.catalog_read import open_current
    from storage.journal import FILE, load_journal, save_journal

    fd = lean_lock.acquire(home)
    if fd is None:
        return None
    try:
        journal_path = os.path.join(home, FILE)
        journal = load_journal(journal_path)
        if journal["conversations"]:
            return None  # a write a crash left: the full path repairs it first
        connection = open_current(home, deletes=True)
        if connection is None:
            return None
        try:
            found = chosen(home, connection, request, set(journal["deleting"]) | set(journal["deleted"]))
        finally:
            connection.close()
        if found is None or (found and not request.uris and not request.yes):  # forget asks first: click asks
            return None
        if found:
            journal["deleting"] = sorted(set(journal["deleting"]) | set(found))
            save_journal(journal_path, journal)
        return found
    finally:
        lean_lock.release(fd)


def chosen(home: str, connection: sqlite3.Connection, request: Request, committed: set[str]) -> list[str] | None:
    """The ids the full path would delete, from the catalog; None when it would find more (a uri the
    catalog does not hold but the archive does, or one a delete already committed to)."""
    if request.uris:
        wanted = list(dict.fromkeys(request.uris))
        present: set[str] = set()
        for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            present.update(row[0] for row in connection.execute(f"SELECT id FROM chats WHERE id IN ({marks})", part))
        if committed.intersection(wanted):
            return None
        absent = [uri for uri in wanted if uri not in present]
        if absent and archived(home, absent):
            return None
        return sorted(present)
    clauses: list[str] = []
    args: list[str | int] = []
    for column, value in (("project", request.project), ("source", request.source)):
        if value is not None:
            clauses.append(f"{column} = ?")
            args.append(value)
    if request.before_us is not None:
        clauses.append("updated < ?")
        args.append(request.before_us)
    rows = connection.execute(f"SELECT id FROM chats WHERE {' AND '.join(clauses)}", args)  # placeholders only
    return sorted(cid for (cid,) in rows if cid not in committed)


def archived(home: str, ids: list[str]) -> bool:
    """Whether sync archived a copy of any of these chats (the full path deletes those too); True
    when the sync state cannot be read here."""
    import json

    try:
        with open(os.path.join(home, STATE_FILE), encoding="utf-8") as handle:
            files = json.load(handle).get("files", {})
        marks = list(files.values())
        return any(mark.get("archive") and set(ids).intersection(mark.get("conversations", [])) for mark in marks)
    except FileNotFoundError:
        return False
    except (OSError, ValueError, AttributeError, TypeError):
        return True


def show(command: str, request: Request, found: list[str]) -> int:
    """What `server.cli_data` prints, and its exit status."""
    from server.cli_quick import echo

    if command == "forget":
        if request.as_json:
            import json

            echo(json.dumps({"deleted": found}, indent=2))
        else:
            echo(FOUND.format(len(found)) if found else "Nothing matched.")
        return 0
    missing = [uri for uri in request.uris if uri not in found]
    if request.as_json:
        import json

        echo(json.dumps({"deleted": found, "not_found": missing}, indent=2))
    elif found:
        echo(FOUND.format(len(found)))
    if missing and not request.as_json:
        echo(f"No chat with uri: {', '.join(missing)}", err=True)
    return 0 if found else 1


def start_finisher(home: str) -> None:
    """Remove the committed chats from every index and the archive now, in a process of its own that
    outlives this one (its own session, no terminal), so the command returns at once."""
    from server.settings_quick import process_environment

    env = process_environment(KEPT_VARIABLES)
    # This checkout first: the finisher must be this code (an editable install finds it anyway)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    if not sys.executable:
        return
    try:
        spawn_detached([sys.executable, "-m", "server.cli_delete", home], env)
    except OSError:  # the delete is committed all the same: the next command or server removes them
        return


def spawn_detached(argv: list[str], env: dict[str, str]) -> None:
    """Start `argv` in a new session with its standard streams on the null device, not waited for.

    `os.posix_spawn` rather than `subprocess`: importing subprocess costs ~10 ms, a fifth of the whole
    command. Where posix_spawn or its new-session flag is missing, subprocess does the same."""
    spawn = getattr(os, "posix_spawn", None)
    if spawn is not None:
        null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        try:
            spawn(argv[0], argv, env, file_actions=null, setsid=True)
            return
        except NotImplementedError:
            pass
    import subprocess

    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def finish(home: str) -> None:
    """The finisher: open the store (no model) and complete every committed delete."""
    from pathlib import Path

    from importers.sources.privacy import finish as finish_deletes
    from storage.library import Library

    if not os.path.isdir(home):  # gone meanwhile: opening would create an empty store there
        return
    library = Library.open(Path(home), load_model=False, heal=False)
    finish_deletes(library)


if __name__ == "__main__":
    finish(sys.argv[1])
