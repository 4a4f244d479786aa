"""The README's example commands work as written on a fresh store with the sample chats: every
`pastchats` line in its code blocks is either run here, in order, or named below with why not."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from server.cli import cli
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")

# Lines a test cannot run as written, and why.
NOT_RUN = {
    "pastchats serve": "waits for an MCP client on stdin until stopped",
    "pastchats model install [NAME] [--from DIR]": "a synopsis; installing is tested offline elsewhere",
    "pastchats model use NAME": "a synopsis; switching models is tested elsewhere",
    "pastchats import ~/Downloads/claude-export.zip": "the reader's own export",
    "pastchats import ~/.claude/projects ~/.codex/sessions": "the reader's own agent logs",
    "pastchats import chats.jsonl --format plain": "the reader's own file",
    "pastchats uninstall": "asks first, then removes the store the later lines read (test_setup_remove.py)",
}


def readme_commands() -> list[str]:
    """Each `pastchats ...` command in the README's bash blocks, comments cut, `a && b` split."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL):
        for line in block.splitlines():
            for part in re.split(r"\s&&\s", re.split(r"\s+#", line)[0]):
                if part.strip().startswith("pastchats "):
                    commands.append(part.strip())
    return commands


def test_the_readme_commands_work_on_the_sample_store(tmp_path: Path, model_cache_dir: Path) -> None:
    commands = readme_commands()
    assert set(NOT_RUN) <= set(commands), "a line named in NOT_RUN is no longer in the README"
    run = [command for command in commands if command not in NOT_RUN]
    assert run[0] == "pastchats import --sample"
    home = tmp_path / "user"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PASTCHATS_HOME": str(tmp_path / "store"),
        "PASTCHATS_MODEL_CACHE": str(model_cache_dir),
        "PASTCHATS_SYNC": "false",
    }
    for command in run:
        result = CliRunner(env=env).invoke(cli, shlex.split(command)[1:])
        assert result.exit_code == 0, f"{command}: {result.output}"
        assert "Traceback" not in result.output
        if command.startswith("pastchats search "):
            assert "<chat uri=" in result.stdout, f"{command} found nothing in the sample: {result.stdout}"
