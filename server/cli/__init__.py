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

from server.cli import data, model, query, serve, setup, ui
from server.cli.common import PastchatsGroup
from storage.owner_only import restrict_new_files

__all__ = ["cli", "main"]


# The order a newcomer meets the commands in, as `pastchats --help` lists them.
SECTIONS: list[tuple[str, list[str]]] = [
    ("Getting started", ["import", "model", "setup", "doctor"]),
    ("Finding chats", ["search", "recent", "read", "resume", "stats", "ui"]),
    ("Keeping the store", ["sync", "reindex", "delete", "forget", "export"]),
    ("Serving", ["serve"]),
    ("Leaving", ["uninstall"]),
]


@click.group(cls=PastchatsGroup, sections=SECTIONS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False, path_type=Path), help="Store directory [PASTCHATS_HOME].")
@click.option("--model", help="fastembed embedding model [PASTCHATS_MODEL].")
@click.option("--store-uri", help="Share the store through an object store: s3://BUCKET/PREFIX [PASTCHATS_STORE_URI].")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(package_name="pastchats")
@click.pass_context
def cli(ctx: click.Context, home: Path | None, model: str | None, store_uri: str | None, verbose: int) -> None:
    """A local, searchable memory of your past chats, for any MCP client.

    Shell completion: add `eval "$(_PASTCHATS_COMPLETE=bash_source pastchats)"` to ~/.bashrc
    (zsh: zsh_source in ~/.zshrc; fish: `_PASTCHATS_COMPLETE=fish_source pastchats | source`).
    """
    restrict_new_files()
    levels = {0: None, 1: "INFO"}
    ctx.ensure_object(dict).update(home=home, model=model, store_uri=store_uri, log_level=levels.get(verbose, "DEBUG"))


# Each command's EXAMPLES, shown at the end of its --help (gh's way: a line to copy teaches more than a flag list).
EXAMPLES: dict[str, list[str]] = {
    "import": [
        "pastchats import --sample                        # try it out on eight sample chats",
        "pastchats import ~/Downloads/claude-export.zip  # a Claude.ai or ChatGPT export; the format is detected",
        "pastchats import chats.jsonl --format plain",
    ],
    "model": ["pastchats model status", "pastchats model install", "pastchats model install --from /media/usb/models"],
    "model status": ["pastchats model status", "pastchats model status --json"],
    "model list": ["pastchats model list"],
    "model install": [
        "pastchats model install                       # download the model in use (about 90 MB)",
        "pastchats model install --from /media/usb/models  # offline: a copied models folder",
    ],
    "model use": ["pastchats model use BAAI/bge-small-en-v1.5"],
    "setup": [
        "pastchats setup claude-desktop",
        "pastchats setup claude-code --print",
        "pastchats setup cursor --remove   # take it out again, as it was before",
    ],
    "uninstall": ["pastchats uninstall", "pastchats uninstall --yes && uv tool uninstall pastchats"],
    "doctor": [
        "pastchats doctor",
        "pastchats doctor --cli           # only what the command line needs",
        "pastchats doctor --fix",
    ],
    "search": [
        'pastchats search "monstera yellow leaves"',
        'pastchats search "join tables" --project learning --after 2025-01-01',
        'pastchats search "trip plan" --after 2w --json',
    ],
    "recent": ["pastchats recent", "pastchats recent -n 10 --after yesterday", "pastchats recent --project work"],
    "read": [
        "pastchats read sample-kyoto-trip",
        "pastchats read sample-kyoto-trip --around 4",
        "pastchats read sample-kyo   # the start of a uri, when no other chat's uri starts so",
    ],
    "resume": [
        "pastchats resume claude-code:4f2a   # cd /its/folder && claude --resume 4f2a…",
        "pastchats resume codex:0199 | sh   # run it",
    ],
    "stats": ["pastchats stats", "pastchats stats --json"],
    "sync": ["pastchats sync", "pastchats sync --path ~/code/my-repo   # also a repository's Aider history"],
    "reindex": ["pastchats reindex"],
    "delete": ["pastchats delete sample-kyoto-trip"],
    "forget": ["pastchats forget --project work --before 2025-01-01", "pastchats forget --source chatgpt --yes"],
    "export": [
        "pastchats export --out chats.jsonl",
        "pastchats export --project work --format json --out work.json",
        "pastchats export --format markdown --out notes/   # a markdown file per chat",
    ],
    "ui": ["pastchats ui", "pastchats ui --no-browser --port 8800   # print the address, open it yourself"],
    "serve": ["pastchats serve", "pastchats serve --transport streamable-http --port 8765"],
}


def with_examples(command: click.Command, path: str) -> None:
    lines = "\n".join(f"  {line}" for line in EXAMPLES[path])
    command.epilog = f"\b\nExamples:\n{lines}"  # \b: click keeps the lines as written
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            with_examples(sub, f"{path} {name}")


for family in (data, model, query, serve, setup, ui):
    for command in family.COMMANDS:
        cli.add_command(command)
        with_examples(command, command.name or "")


def main() -> None:
    cli()
