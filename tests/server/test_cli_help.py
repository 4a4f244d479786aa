"""Help that teaches, in gh's way: every command ends with examples, the commands are listed in the
order a newcomer uses them with their whole first line, and the query examples work on the sample."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from server.cli import EXAMPLES, cli


def every_command(group: click.Group = cli, path: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        yield f"{path}{name}", command
        if isinstance(command, click.Group):
            yield from every_command(command, f"{path}{name} ")


@pytest.mark.parametrize(("path", "command"), list(every_command()))
def test_every_command_help_ends_with_examples(path: str, command: click.Command) -> None:
    result = CliRunner().invoke(cli, [*path.split(), "--help"])
    assert result.exit_code == 0
    examples = result.stdout.split("\n  Examples:\n", 1)[1].splitlines()
    assert examples
    assert all(line.strip().startswith(f"pastchats {path}") for line in examples if line.strip())


def test_the_commands_are_listed_in_the_order_a_newcomer_uses_them() -> None:
    text = CliRunner().invoke(cli, ["--help"], terminal_width=200).stdout
    sections = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert sections[-5:] == ["Getting started:", "Finding chats:", "Keeping the store:", "Serving:", "Leaving:"]
    listed = [line.split()[0] for line in text.split("Getting started:")[1].splitlines() if line.startswith("  ")]
    assert listed[:4] == ["import", "model", "setup", "doctor"]
    assert listed[4:9] == ["search", "recent", "read", "resume", "stats"]
    assert "Delete chats by uri (as search and recent show them) from every index and the archive." in text
    assert "...\n" not in text.split("Getting started:")[1]
    assert "_PASTCHATS_COMPLETE=bash_source pastchats" in " ".join(text.split())


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> dict[str, str]:
    env = {
        "PASTCHATS_HOME": str(tmp_path_factory.mktemp("store")),
        "PASTCHATS_MODEL_CACHE": str(model_cache_dir),
        "PASTCHATS_SYNC": "false",
    }
    assert CliRunner(env=env).invoke(cli, ["import", "--sample"]).exit_code == 0
    return env


@pytest.mark.parametrize("line", [line for name in ("search", "recent", "read", "stats") for line in EXAMPLES[name]])
def test_the_query_examples_work_on_the_sample(sample: dict[str, str], line: str) -> None:
    args = shlex.split(line.split("  #")[0])[1:]
    result = CliRunner(env=sample).invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip()
    if args[0] == "search":
        assert "<chat uri=" in result.stdout or '"chats"' in result.stdout
