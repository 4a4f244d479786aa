"""`pastchats setup CLIENT --remove` and `pastchats uninstall`: a client's config as it was before setup
(bytes and mode), and nothing of pastchats left in the home."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from tests.server.test_setup_clients import CLIENTS, EXISTING, SERVERS_KEY


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's home with nothing in it; every folder pastchats and the clients use is inside it."""
    user = tmp_path / "home"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "APPDATA", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name in ("PASTCHATS_HOME", "PASTCHATS_MODEL_CACHE", "FASTEMBED_CACHE_PATH", "PASTCHATS_USER_HOME"):
        monkeypatch.delenv(name, raising=False)
    before = os.umask(0o022)
    yield user
    os.umask(before)


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under `root` with its mode and, for files, its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        found[str(path.relative_to(root))] = (mode, path.read_bytes() if path.is_file() else None)
    return found


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("kept", [0o600, 0o644], ids=oct)
def test_remove_gives_back_the_config_as_it_was_byte_for_byte_and_mode_too(client: str, kept: int, home: Path) -> None:
    config = {
        "claude-desktop": home / ".config" / "Claude" / "claude_desktop_config.json",
        "claude-code": home / ".claude.json",
        "cursor": home / ".cursor" / "mcp.json",
        "vscode": home / ".config" / "Code" / "User" / "mcp.json",
    }[client]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(EXISTING[client], indent=4) + "  \n", encoding="utf-8")  # not our formatting
    config.chmod(kept)
    before = snapshot(home)

    run("setup", client)
    run("--home", str(home / "elsewhere"), "setup", client)  # a second setup, replacing the entry
    assert "pastchats" in json.loads(config.read_text(encoding="utf-8"))[SERVERS_KEY[client]]
    result = run("setup", client, "--remove")

    assert "as it was before" in result.output
    assert snapshot(home) == before  # the same bytes, the same mode, and no backup left


@pytest.mark.parametrize("client", CLIENTS)
def test_remove_deletes_a_config_setup_created_and_the_folders_made_for_it(client: str, home: Path) -> None:
    run("setup", client)
    assert snapshot(home)
    result = run("setup", client, "--remove")
    assert "deleted" in result.output
    assert snapshot(home) == {}


def test_remove_keeps_what_changed_in_the_config_since_setup(home: Path) -> None:
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps(EXISTING["cursor"]), encoding="utf-8")
    config.chmod(0o640)
    run("setup", "cursor")
    changed = json.loads(config.read_text(encoding="utf-8"))
    changed["mcpServers"]["added-later"] = {"command": "uvx", "args": ["other"]}
    config.write_text(json.dumps(changed), encoding="utf-8")

    result = run("setup", "cursor", "--remove")

    assert "everything else in it is kept" in result.output
    left = json.loads(config.read_text(encoding="utf-8"))
    assert left == {
        "mcpServers": {**EXISTING["cursor"]["mcpServers"], "added-later": changed["mcpServers"]["added-later"]}
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]  # the backup is gone


def test_remove_where_pastchats_is_not_configured_changes_nothing(home: Path) -> None:
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps(EXISTING["cursor"]), encoding="utf-8")
    before = snapshot(home)
    result = run("setup", "cursor", "--remove")
    assert "does not start pastchats" in result.output
    assert snapshot(home) == before


def test_uninstall_leaves_nothing_of_pastchats_in_the_home(home: Path) -> None:
    """Client entries, the store and pastchats' cache all go; the user's own configs are as they were."""
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps(EXISTING["claude-desktop"]), encoding="utf-8")
    before = snapshot(home)
    run("setup", "claude-desktop")
    run("setup", "claude-code")
    run("import", "--sample", "-q")
    (home / ".cache" / "pastchats" / "models").mkdir(parents=True, exist_ok=True)
    assert (home / ".local" / "share" / "pastchats").is_dir()

    refused = CliRunner().invoke(cli, ["uninstall"], input="n\n")
    assert refused.exit_code != 0
    assert (home / ".local" / "share" / "pastchats").is_dir()

    result = run("uninstall", "--yes")

    assert "uv tool uninstall pastchats" in result.output
    assert snapshot(home) == before
    assert not [path for path in snapshot(home) if "pastchats" in path]
    assert not (home / ".cache" / "Microsoft").exists()  # onnxruntime's device id: pastchats never causes it


@pytest.mark.integration
def test_a_whole_life_with_the_model_leaves_nothing_behind(tmp_path: Path, model_cache_dir: Path) -> None:
    """As a new user, in processes of their own: install the model (offline, from a copy), import, connect
    a client, uninstall. The models, their int8 copy, the store, the entry go, and onnxruntime (loaded
    to embed) never wrote its device id into the home."""
    import subprocess
    import sys

    user = tmp_path / "home"
    user.mkdir()
    env = {"HOME": str(user), "PATH": os.defpath, "LANG": "C.UTF-8", "PASTCHATS_SYNC": "false"}

    def pastchats(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    pastchats("model", "install", "--from", str(model_cache_dir), "-q")
    pastchats("import", "--sample", "-q")
    pastchats("setup", "claude-code")
    assert (user / ".cache" / "pastchats" / "models" / "derived").is_dir()  # the int8 copy documents use
    assert not (user / ".cache" / "Microsoft").exists()

    pastchats("uninstall", "--yes")

    assert snapshot(user) == {}
