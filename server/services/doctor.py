"""`pastchats doctor`: is everything a client needs in place? Each problem comes with the command that fixes it.

Checks, in the order a new user meets them: the embedding model, the store, the secrets redacted in it,
who else can read it, the agent logs `sync` would read, the shared store on an object store (if any), and the MCP
clients configured to start pastchats.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from server.settings import Settings


@dataclass
class Check:
    """`ok` False is a problem; with `warning` it is worth knowing but does not fail `doctor` (no MCP
    client configured: many use the CLI alone, or a client `setup` does not know)."""

    name: str
    ok: bool
    summary: str
    fix: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    warning: bool = False

    @property
    def failed(self) -> bool:
        return not self.ok and not self.warning


def check_model(settings: Settings) -> Check:
    from server.services.model import model_report
    from storage.embedding.model_files import install_hint

    report = model_report(settings)
    fix = install_hint(report["model"])
    if report["loads"]:
        return Check("model", True, f"{report['model']} is installed and loads ({report['dim']} dims)", None, report)
    if (parent := _unwritable_parent(settings.model_cache)) is not None:
        fix = (
            f"{parent} is read-only or not yours to write, so the model cannot be installed there: "
            "export PASTCHATS_MODEL_CACHE=/a/folder/you/can/write, then " + fix
        )
    return Check("model", False, report["problem"] or f"{report['model']} does not load", fix, report)


def _unwritable_parent(home: Path) -> Path | None:
    """The nearest existing folder above a store not made yet, when the store cannot be made in it."""
    parent = home
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return None if os.access(parent, os.W_OK) else parent


def check_store(settings: Settings, model_ok: bool) -> Check:
    from storage.upkeep.health import inspect

    health = inspect(settings.home)
    details = {key: str(value) if isinstance(value, Path) else value for key, value in asdict(health).items()}
    if health.blockers:
        return Check("store", False, "; ".join(health.blockers), None, details)
    if not health.exists and (parent := _unwritable_parent(health.home)) is not None:
        return Check(
            "store",
            False,
            f"the store at {health.home} cannot be created: {parent} is read-only or not yours to write",
            f"export PASTCHATS_HOME=/a/folder/you/can/write  (where the store is kept; every command reads it), "
            f"or make {parent} writable",
            details,
        )
    if not health.exists or (health.conversations == 0 and not health.problems):
        where = "does not exist yet" if not health.exists else "holds no chats"
        fix = "pastchats sync  (agent logs), pastchats import FILE  (exports), or pastchats import --sample"
        return Check("store", False, f"the store at {health.home} {where}", fix, details)
    counts = f"{health.conversations} chats, {health.messages} messages, {health.passages} passages"
    problems = list(health.problems)
    if health.unfindable:
        problems.append(f"{health.unfindable} chat(s) cannot be found by search")
    if health.interrupted_writes:
        problems.append(f"{health.interrupted_writes} chat(s) left half-written by an interrupted import")
    if health.unfinished_deletes:
        problems.append(  # hidden from every reader already; a background process or the next command removes them
            f"{health.unfinished_deletes} chat(s) a delete or forget has not finished removing (still on disk)"
        )
    if health.awaiting_embeddings:
        problems.append(f"{health.awaiting_embeddings} passage(s) await embeddings (keyword-searchable only)")
    if not problems:
        return Check("store", True, f"{counts}; every chat is searchable and both indexes agree", None, details)
    only_embeddings = problems == [problems[-1]] and bool(health.awaiting_embeddings)
    fix = "pastchats model install" if only_embeddings and not model_ok else "pastchats doctor --fix"
    return Check("store", False, f"{counts}; " + "; ".join(problems), fix, details)


def check_secrets(settings: Settings) -> Check:
    """Whether chats are redacted as they are written, and what was redacted, per source."""
    from server.services.redacted import redaction_text
    from storage.errors import PastchatsError
    from storage.stores.catalog import Catalog

    redacted: dict[str, dict[str, int]] = {}
    if (settings.home / "store.json").exists():
        try:
            with Catalog.read(settings.home) as catalog:
                redacted = catalog.redactions() if catalog is not None else {}
        except PastchatsError:  # a store this pastchats cannot read: the store check names why
            return Check("secrets", True, "not read: see the store check", None, {"redaction": settings.redact})
    details = {"redaction": settings.redact, "redacted": redacted, "allowed": settings.redact_allow}
    summary = redaction_text(redacted, settings.redact).split(": ", 1)[1]
    if not settings.redact:
        return Check("secrets", True, f"redaction is OFF; {summary}", None, details)
    return Check("secrets", True, f"redacted at import: {summary}", None, details)


def check_permissions(settings: Settings) -> Check:
    """The store (its archive of agent logs included) and pastchats' own model cache are their user's
    alone. Opening the store makes them so; this finds what was loosened since (a chmod, a restore)."""
    from server.settings import own_cache
    from storage.owner_only import exposed

    home = settings.home.expanduser()
    places = {"store": home, "model cache": own_cache()}
    found = {name: list(exposed(root)) for name, root in places.items()}
    archive = home / "archive"
    archived = sum(path == archive or archive in path.parents for path in found["store"])
    details: dict[str, Any] = {
        "exposed": {name: len(paths) for name, paths in found.items()},
        "archive": archived,
        "examples": [str(path) for paths in found.values() for path in paths[:3]],
    }
    if not any(found.values()):
        return Check("permissions", True, "the store and the model cache are readable by you alone", None, details)
    where = []
    if found["store"]:
        of_which = f", {archived} in its archive of agent logs" if archived else ""
        where.append(f"{len(found['store'])} in the store at {home}{of_which}")
    if found["model cache"]:
        where.append(f"{len(found['model cache'])} in pastchats' model cache at {own_cache()}")
    summary = "other users of this machine can read files and folders: " + "; ".join(where)
    return Check("permissions", False, summary, "pastchats doctor --fix", details)


def check_sources(settings: Settings) -> Check:
    from importers.sources.discovery import discover

    found, problems = discover(settings.agent_env, settings.user_home, settings.sync_paths)
    counts: dict[str, int] = {}
    for source in found:
        counts[source.format] = counts.get(source.format, 0) + 1
    details: dict[str, Any] = {"files": counts, "problems": [{"path": p.where, "reason": p.reason} for p in problems]}
    listed = ", ".join(f"{name} {n} file(s)" for name, n in sorted(counts.items())) or "no agent logs"
    if problems:
        bad = "; ".join(f"{problem.where}: {problem.reason}" for problem in problems)
        return Check("sources", False, f"{listed}; {bad}", "fix or remove them in PASTCHATS_SYNC_PATHS", details)
    return Check("sources", True, f"sync finds {listed}", None, details)


def check_watcher(settings: Settings) -> Check:
    """Which process follows the agent logs live, how (file events, or polling and why), how far behind."""
    from server.services.sync.watching import watch_status

    status = watch_status(settings.home)
    if status is None:
        summary = "no process watches the agent logs now: a client's `pastchats serve` or `pastchats sync --watch` does"
        return Check("watcher", True, summary, None, {"watching": False})
    details = {"watching": True} | asdict(status)
    if status.mode == "polling":
        summary = f"polling, since file events are unavailable: {status.why_polling}; {status.text()}"
        return Check("watcher", False, summary, None, details, warning=True)
    return Check("watcher", True, status.text(), None, details)


def check_shared_store(settings: Settings) -> Check:
    """The shared store (`PASTCHATS_STORE_URI`): its address, whether it answers now, how many chats it
    holds, and when this machine last exchanged with it."""
    from storage.errors import SharedStoreUnreachable
    from storage.stores.shared_store import SharedStore
    from storage.writing.exchange import SharedState, record_contact

    uri = settings.store_uri
    if not uri:
        return Check("shared store", True, "none: this machine's store is its own (PASTCHATS_STORE_URI shares it)")
    shared = SharedStore(uri)
    endpoint = shared.options.get("endpoint", "AWS S3")
    details: dict[str, Any] = {"uri": uri, "endpoint": endpoint, "reachable": False}
    try:
        chats = len(shared.stamps())
        details |= {"reachable": True, "chats": chats, "version": shared.version()}
    except SharedStoreUnreachable as exc:
        record_contact(settings.home, uri, exc)
        fix = "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL (and the network)"
        return Check("shared store", False, f"{uri} at {endpoint} cannot be reached: {exc.reason}", fix, details)
    record_contact(settings.home, uri, None)
    state = SharedState.load(settings.home, uri)
    details["this_machine_sent_or_received"] = len(state.seen)
    summary = (
        f"{uri} at {endpoint} answers: {chats} chat(s) from every machine, {len(state.seen)} exchanged with this one"
    )
    if state.version is None:
        return Check("shared store", False, summary + "; not synced yet", "pastchats sync", details, warning=True)
    return Check("shared store", True, summary, None, details)


def check_clients(settings: Settings, only: str | None = None) -> Check:
    """Every client `setup` knows (none configured is a warning), or only the one asked about (then
    it must be configured)."""
    from server.services.setup_clients import CLIENTS, configured_entry, default_config_path

    system = platform.system()
    configured: dict[str, Any] = {}
    broken: list[str] = []
    for name in [only] if only else CLIENTS:
        path = default_config_path(name, system, settings.user_home, settings.agent_env)
        entry = configured_entry(name, path)
        if entry is None:
            continue
        command = str(entry.get("command", ""))
        runnable = Path(command).is_absolute() and os.access(command, os.X_OK)
        configured[name] = {"config": str(path), "command": command, "runnable": runnable}
        if not runnable:
            broken.append(name)
    details = {"configured": configured}
    if broken:
        names = ", ".join(broken)
        fixes = "; ".join(f"pastchats setup {name}" for name in broken)
        return Check("clients", False, f"{names}: the configured command does not exist", fixes, details)
    if only and not configured:
        fix = f"pastchats setup {only}"
        return Check("clients", False, f"{CLIENTS[only].title} is not configured to start pastchats", fix, details)
    if not configured:
        fix = "pastchats setup claude-desktop  (or claude-code, cursor, vscode); `doctor --cli` checks the CLI alone"
        summary = "no MCP client that `setup` knows is configured to start pastchats"
        return Check("clients", False, summary, fix, details, warning=True)
    return Check("clients", True, "configured: " + ", ".join(CLIENTS[n].title for n in configured), None, details)


def check_versions() -> Check:
    """Whether the installed dependencies are the versions pastchats was tested with (uv.lock's)."""
    from server.services.versions import drift

    found = drift()
    details = {"drift": [asdict(item) for item in found]}
    if not found:
        return Check("versions", True, "every dependency is the version pastchats was tested with", None, details)
    listed = ", ".join(f"{d.package} {d.installed} (tested: {' or '.join(d.tested)})" for d in found)
    fix = "from pastchats' folder: uv tool install --reinstall . --constraints server/constraints.txt"
    return Check("versions", False, f"not the tested versions: {listed}", fix, details, warning=True)


def run_checks(settings: Settings, *, client: str | None = None, cli_only: bool = False) -> list[Check]:
    """Every check; `client`: only that MCP client's config; `cli_only`: no client at all."""
    model = check_model(settings)
    store = check_store(settings, model.ok)
    checks = [model, store, check_secrets(settings), check_permissions(settings), check_sources(settings)]
    checks += [check_watcher(settings), check_shared_store(settings), check_versions()]
    return checks if cli_only else [*checks, check_clients(settings, client)]


def render(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        mark = "ok  " if check.ok else "BAD " if check.failed else "warn"
        lines.append(f"{mark} {check.name}: {check.summary}")
        if check.fix:
            lines.append(f"    fix: {check.fix}")
    bad = sum(check.failed for check in checks)
    warned = sum(check.warning and not check.ok for check in checks)
    verdict = "All good" if not bad else f"{bad} problem(s)"
    lines.append(verdict + (f", {warned} warning(s)." if warned else "."))
    return "\n".join(lines)
