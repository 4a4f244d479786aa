"""A read-only home or store: commands say so in one line (the folder, and PASTCHATS_HOME to move it),
doctor suggests nothing that fails the same way, and search answers from what is on disk."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner, Result

from server.cli import cli
from tests.server.test_stranded_store import plain, read_only, store


def run_as_user(user_home: Path, *args: str, **env: str) -> Result:
    """A command as a user with this HOME runs it: the store where pastchats keeps it by default."""
    base = {
        "HOME": str(user_home),
        "PASTCHATS_SYNC": "false",
        "PASTCHATS_MODEL_CACHE": str(user_home.parent / "no-models"),
        "XDG_DATA_HOME": "",
        "XDG_CONFIG_HOME": "",
        "XDG_CACHE_HOME": "",
        "PASTCHATS_HOME": "",
    }
    return CliRunner().invoke(cli, list(args), env={**base, **env})


def test_a_read_only_home_is_told_in_one_line_with_where_to_move_the_store(tmp_path: Path) -> None:
    user_home = tmp_path / "me"
    user_home.mkdir()
    with read_only(user_home) as mounted:
        for args in (["stats"], ["search", "sourdough"], ["recent"], ["sync"]):
            result = run_as_user(mounted, *args)
            text = plain(result)
            assert result.exit_code != 0 or "read-only" in text, text
            assert "PASTCHATS_HOME" in text, (args, text)
            assert "read-only" in text or "cannot be written" in text, (args, text)


def test_doctor_on_a_read_only_home_suggests_moving_the_store_not_a_command_that_fails(tmp_path: Path) -> None:
    user_home = tmp_path / "me"
    user_home.mkdir()
    with read_only(user_home) as mounted:
        text = plain(run_as_user(mounted, "doctor"))
    assert "PASTCHATS_HOME" in text
    assert "fix: pastchats sync" not in text
    assert "fix: export PASTCHATS_HOME=" in text


def test_search_over_a_read_only_store_answers_from_its_keyword_index(tmp_path: Path) -> None:
    home = store(tmp_path)
    with read_only(home) as mounted:
        result = CliRunner().invoke(
            cli,
            ["--home", str(mounted), "search", "sourdough"],
            env={"PASTCHATS_SYNC": "false", "PASTCHATS_MODEL_CACHE": str(tmp_path / "no-models")},
        )
        text = plain(result)
    assert "bread" in text, text
    assert os.path.isdir(home)
