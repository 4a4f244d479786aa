"""`pastchats setup CLIENT` and `pastchats doctor`: connecting clients, and checking the whole chain."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from server.cli.common import json_option, json_text, make_settings, opened, quiet_option
from server.services.setup_clients import CLIENTS
from storage.embedding.model_files import install_hint

if TYPE_CHECKING:
    from server.settings import Settings


@click.command()
@click.argument("client", type=click.Choice(list(CLIENTS)))
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this config file instead of the client's default one.",
)
@click.option("--print", "print_only", is_flag=True, help="Only print the entry; change no file.")
@click.option(
    "--remove", is_flag=True, help="Take pastchats out of the config again, as it was before setup; delete the backups."
)
@json_option
@click.pass_context
def setup(
    ctx: click.Context, client: str, config_path: Path | None, print_only: bool, remove: bool, as_json: bool
) -> None:
    """Add pastchats to an MCP client's config (claude-desktop, claude-code, cursor, vscode).

    Keeps every other server and setting, backs up the old file, and changes nothing when the entry is
    already there. Restart the client afterwards. `--remove` undoes it.
    """
    from server.services.setup_clients import default_config_path, entry, executable
    from server.settings import default_home, default_model_cache

    settings: Settings = make_settings(ctx)
    if remove:
        if print_only:
            raise click.UsageError("--print and --remove exclude each other: pass one")
        path = config_path or default_config_path(client, platform.system(), settings.user_home, settings.agent_env)
        removed = remove_client(client, path, settings.user_home)
        click.echo(json_text(removed) if as_json else removed["text"])
        return
    args = [] if settings.home == default_home() else ["--home", str(settings.home.expanduser().absolute())]
    # A client starts the server with almost no environment: a model folder other than the default must be
    # named in the entry itself, or the server would not find the model.
    env = {}
    if settings.model_cache != default_model_cache():
        env["PASTCHATS_MODEL_CACHE"] = str(settings.model_cache.expanduser().absolute())
    ours = entry(client, executable(), [*args, "serve"], env)
    kind = CLIENTS[client]
    path = config_path or default_config_path(client, platform.system(), settings.user_home, settings.agent_env)
    if print_only:
        if as_json:
            click.echo(json_text({"client": client, "config": str(path), "changed": False, "entry": ours}))
            return
        click.echo(json.dumps({kind.servers_key: {"pastchats": ours}}, indent=2))
        click.echo(f"(for {path})", err=True)
        return
    _write_client(client, path, ours, as_json)


def _write_client(client: str, path: Path, ours: dict[str, Any], as_json: bool) -> None:
    """Write pastchats' entry into one client's config and say what was done."""
    from server.services.setup_clients import SetupError, write_entry

    kind = CLIENTS[client]
    try:
        result = write_entry(client, path, ours)
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
    if as_json:
        backup_path = str(result.backup) if result.backup else None
        fields = {"changed": result.changed, "replaced": result.replaced, "backup": backup_path, "entry": ours}
        click.echo(json_text({"client": client, "config": str(path), **fields}))
        return
    if not result.changed:
        click.echo(f"{kind.title} already starts pastchats ({path}); nothing changed.")
        return
    backup = f"; the previous file is saved as {result.backup}" if result.backup else ""
    done = "Replaced the pastchats entry in" if result.replaced else "Added pastchats to"
    click.echo(f"{done} {kind.title}'s config: {path}{backup}.\nRestart {kind.title} to connect it.")


def remove_client(client: str, path: Path, user_home: Path) -> dict[str, Any]:
    """Take pastchats out of one client's config; what was done, with a line saying it to a person."""
    from server.services.setup_clients import SetupError, remove_entry

    title = CLIENTS[client].title
    try:
        result = remove_entry(client, path, user_home)
    except SetupError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
    done = {
        "restored": f"Removed pastchats from {title}: {path} is again as it was before `pastchats setup {client}`",
        "edited": f"Removed pastchats from {title}'s config: {path} (everything else in it is kept)",
        "deleted": f"Removed pastchats from {title}: deleted {path}, which `pastchats setup {client}` had created",
        "unchanged": f"{title} does not start pastchats ({path}); nothing to remove",
    }[result.how]
    gone = f"; deleted {len(result.backups)} backup(s) setup had made" if result.backups else ""
    restart = f"\nRestart {title} if it is running." if result.removed else ""
    return {
        "client": client,
        "config": str(path),
        "removed": result.removed,
        "how": result.how,
        "backups_deleted": [str(backup) for backup in result.backups],
        "text": f"{done}{gone}.{restart}",
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.option(
    "--fix",
    is_flag=True,
    help="Repair the store, make it owner-only, embed what awaits embedding, then check again.",
)
@click.option("--client", type=click.Choice(list(CLIENTS)), help="Check only this MCP client's config.")
@click.option("--cli", "cli_only", is_flag=True, help="Check what the command line needs; no MCP client.")
@quiet_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, fix: bool, client: str | None, cli_only: bool, quiet: bool) -> None:
    """Check the model, the store, the agent logs sync finds, and the configured clients.

    Each problem comes with the command that fixes it. The exit status is 1 when something fails;
    a warning (no MCP client configured) leaves it 0.
    """
    from server.services.doctor import render, run_checks

    if client and cli_only:
        raise click.UsageError("--client and --cli exclude each other: pass one")
    settings = make_settings(ctx)
    unfixed = fix_store(settings, show=not (as_json or quiet)) if fix else []
    checks = run_checks(settings, client=client, cli_only=cli_only)
    failed = any(check.failed for check in checks)
    if as_json:
        payload = {
            "ok": not failed,
            "checks": [c.__dict__ | {"failed": c.failed} for c in checks],
            "not_fixed": unfixed,
        }
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        click.echo(render(checks))
        for line in unfixed:
            click.echo(f"not fixed: {line}")
    if failed or unfixed:
        ctx.exit(1)


def fix_store(settings: Settings, *, show: bool) -> list[str]:
    """Every repair `doctor --fix` can make: open the store (which finishes crashed writes), read
    every table to its last value and restore what is damaged, rebuild what is derived, embed what
    awaits embedding. Returns what it could not do, one line each, with its next step."""
    from server.services.embedding import embed_with_progress
    from storage.errors import PastchatsError

    try:
        with opened(settings, "write") as library:
            unfixed = library.mend()
            if library.embedder is not None:
                embed_with_progress(library, show=show)
            elif library.pending_embeddings():
                unfixed.append(
                    f"passages await embeddings and the model does not load ({library.load_error}): "
                    f"{install_hint()}, then `pastchats doctor --fix`"
                )
    except PastchatsError as exc:
        return [str(exc)]
    return unfixed


@click.command()
@click.option("--yes", is_flag=True, help="Remove without asking first.")
@json_option
@click.pass_context
def uninstall(ctx: click.Context, yes: bool, as_json: bool) -> None:
    """Remove everything pastchats keeps: its entry in each client, the store, its caches and models.

    Lists what it will remove and asks first. Quit your MCP clients before, and afterwards remove the
    command itself with `uv tool uninstall pastchats` (or `pipx uninstall pastchats`).
    """
    import shutil
    import sys

    from server.services.setup_clients import backups, configured_entry, default_config_path, remove_empty_folders
    from server.settings import own_cache

    settings = make_settings(ctx)
    system = platform.system()
    clients = {}
    for name in CLIENTS:
        path = default_config_path(name, system, settings.user_home, settings.agent_env)
        if configured_entry(name, path) is not None or backups(path.resolve() if path.is_symlink() else path):
            clients[name] = path
    folders = {"store": settings.home.expanduser(), "cache and models": own_cache()}
    folders = {what: folder for what, folder in folders.items() if folder.exists()}
    kept = settings.model_cache.expanduser()
    named_models = kept if own_cache() not in [kept, *kept.parents] else None
    listing = [f"{CLIENTS[name].title}'s entry in {path}" for name, path in clients.items()]
    listing += [f"the {what} folder {folder}" for what, folder in folders.items()]
    if listing and not yes:
        if not as_json:
            click.echo("This removes, for good:\n" + "\n".join(f"  {line}" for line in listing))
        if not sys.stdin.isatty():
            raise click.UsageError("nothing was removed: run `pastchats uninstall --yes` to remove without asking")
        click.confirm("Remove them?", abort=True, err=True)
    lines = [remove_client(name, path, settings.user_home)["text"].split("\n")[0] for name, path in clients.items()]
    for what, folder in folders.items():
        shutil.rmtree(folder)
        remove_empty_folders(folder.parent, settings.user_home)
        lines.append(f"Deleted the {what} folder {folder}.")
    if named_models is not None:
        lines.append(f"Left {named_models}: a models folder you named (PASTCHATS_MODEL_CACHE or FASTEMBED_CACHE_PATH).")
    lines.append("Now remove the command itself: uv tool uninstall pastchats (or pipx uninstall pastchats).")
    if as_json:
        click.echo(json_text({"removed": listing, "kept": [str(named_models)] if named_models else []}))
    else:
        click.echo("\n".join(lines if listing else ["Nothing of pastchats is left to remove.", *lines]))


COMMANDS: list[click.Command] = [setup, doctor, uninstall]
