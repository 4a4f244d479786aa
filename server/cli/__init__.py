"""The `pastchats` command: import chat histories, query them as the tools do, serve them over MCP.

One click group; each family of commands lives in its own module, and every command imports what it
needs (the store, the model, the MCP SDK) inside its body, so that `--help` and argument errors stay
quick.

The group's callback runs before every command, and first restricts the umask: whatever a command
creates (LanceDB's and Tantivy's files included, and those of the processes it starts) is owner-only.
"""

from __future__ import annotations

from pathlib import Path

import click

from server.cli import data, model, query, serve, setup
from server.cli.common import PastchatsGroup
from storage.owner_only import restrict_new_files

__all__ = ["cli", "main"]


@click.group(cls=PastchatsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False, path_type=Path), help="Store directory [PASTCHATS_HOME].")
@click.option("--model", help="fastembed embedding model [PASTCHATS_MODEL].")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(package_name="pastchats")
@click.pass_context
def cli(ctx: click.Context, home: Path | None, model: str | None, verbose: int) -> None:
    """A local, searchable memory of your past chats, for any MCP client."""
    restrict_new_files()
    levels = {0: None, 1: "INFO"}
    ctx.ensure_object(dict).update(home=home, model=model, log_level=levels.get(verbose, "DEBUG"))


for family in (data, model, query, serve, setup):
    for command in family.COMMANDS:
        cli.add_command(command)


def main() -> None:
    cli()
