"""`pastchats` on a store from another version: an older one is migrated and answers, a newer one is
refused in one line that names the upgrade."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.upkeep.store_meta import STORE_FORMAT
from tests.storage.helpers import CHATS_FOR_FORMAT as CHATS
from tests.storage.helpers import older_store, set_format


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


@pytest.mark.usefixtures("hash_embedder")
def test_the_cli_migrates_an_older_store_and_answers_from_it(tmp_path: Path) -> None:
    home = tmp_path / "store"
    older_store(home)
    result = run(home, "search", "sourdough acetone")
    assert result.exit_code == 0, result.output
    assert "uri='bread'" in result.stdout
    assert f"from format {STORE_FORMAT - 1} to {STORE_FORMAT}" in result.stderr


@pytest.mark.usefixtures("hash_embedder")
def test_the_cli_refuses_a_newer_store_in_one_line_naming_the_upgrade(tmp_path: Path) -> None:
    home = tmp_path / "store"
    Library.open(home, embedder=HashEmbedder()).import_conversations(CHATS)
    set_format(home, STORE_FORMAT + 1)
    result = run(home, "stats")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("Error: the store in ")
    assert "Upgrade pastchats" in line
