"""`pastchats setup CLIENT`: our entry merged into each client's real config shape, nothing else touched."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from server.services.setup_clients import default_config_path, write_entry

CLIENTS = ["claude-desktop", "claude-code", "cursor", "vscode"]
SERVERS_KEY = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "cursor": "mcpServers", "vscode": "servers"}

# What each client's config may already hold: other servers and unrelated settings that must survive.
EXISTING: dict[str, dict[str, Any]] = {
    "claude-desktop": {
        "mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}},
        "globalShortcut": "Ctrl+Space",
    },
    "claude-code": {
        "numStartups": 42,
        "projects": {"/home/u/app": {"mcpServers": {"local-one": {"type": "stdio", "command": "x"}}}},
        "mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}},
    },
    "cursor": {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}},
    "vscode": {
        "inputs": [{"type": "promptString", "id": "token", "password": True}],
        "servers": {
            "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
        },
    },
}


def setup(config: Path, client: str, *extra: str, home: Path | None = None) -> Result:
    args = ["--home", str(home)] if home else []
    return CliRunner().invoke(cli, [*args, "setup", client, "--config", str(config), *extra])


@pytest.mark.parametrize("client", CLIENTS)
def test_setup_adds_our_entry_and_keeps_every_other_server_and_setting(client: str, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(EXISTING[client], indent=4), encoding="utf-8")
    result = setup(config, client)
    assert result.exit_code == 0, result.output
    written = json.loads(config.read_text(encoding="utf-8"))
    key = SERVERS_KEY[client]
    ours = written[key].pop("pastchats")
    assert written == EXISTING[client]
    assert Path(ours["command"]).is_absolute()
    assert os.access(ours["command"], os.X_OK)
    assert ours["args"][-1] == "serve"
    assert ("type" in ours) == (client in ("claude-code", "vscode"))
    if "type" in ours:
        assert ours["type"] == "stdio"


@pytest.mark.parametrize("client", CLIENTS)
def test_setup_backs_up_the_old_file_and_a_second_run_changes_nothing(client: str, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    original = json.dumps(EXISTING[client], indent=4)
    config.write_text(original, encoding="utf-8")
    first = setup(config, client)
    after_first = config.read_text(encoding="utf-8")
    second = setup(config, client)
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    assert "nothing changed" in second.stdout
    assert config.read_text(encoding="utf-8") == after_first
    backups = list(tmp_path.glob("config.json.*.bak"))
    assert len(backups) == 1
    assert backups[0].read_text(encoding="utf-8") == original


@pytest.mark.parametrize("client", CLIENTS)
def test_setup_creates_a_missing_config_with_only_our_entry(client: str, tmp_path: Path) -> None:
    config = tmp_path / "nested" / "config.json"
    result = setup(config, client)
    assert result.exit_code == 0, result.output
    assert list(json.loads(config.read_text(encoding="utf-8"))[SERVERS_KEY[client]]) == ["pastchats"]
    assert not list(config.parent.glob("*.bak"))


def test_a_non_default_store_is_named_in_the_entry(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    assert setup(config, "cursor", home=tmp_path / "store").exit_code == 0
    args = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["pastchats"]["args"]
    assert args == ["--home", str(tmp_path / "store"), "serve"]


def test_a_config_with_comments_is_left_alone_with_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    text = '{\n  // my servers\n  "servers": {}\n}\n'
    config.write_text(text, encoding="utf-8")
    result = setup(config, "vscode")
    assert result.exit_code == 1
    assert "--print" in result.output
    assert "Traceback" not in result.output
    assert config.read_text(encoding="utf-8") == text


def test_print_shows_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    result = setup(config, "claude-desktop", "--print")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["mcpServers"]["pastchats"]["args"][-1] == "serve"
    assert not config.exists()


def test_without_config_the_clients_own_file_in_the_users_home_is_written(tmp_path: Path) -> None:
    runner = CliRunner(env={"PASTCHATS_USER_HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": None})
    result = runner.invoke(cli, ["setup", "claude-code"])
    assert result.exit_code == 0, result.output
    assert "pastchats" in json.loads((tmp_path / ".claude.json").read_text(encoding="utf-8"))["mcpServers"]


def test_an_unknown_client_is_an_argument_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["setup", "emacs"])
    assert result.exit_code == 2
    assert "claude-desktop" in result.output


HOME = Path("/home/u")


@pytest.mark.parametrize(
    ("client", "system", "env", "expected"),
    [
        ("claude-desktop", "Darwin", {}, HOME / "Library/Application Support/Claude/claude_desktop_config.json"),
        (
            "claude-desktop",
            "Windows",
            {"APPDATA": "C:/Users/u/AppData/Roaming"},
            Path("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json"),
        ),
        ("claude-desktop", "Linux", {}, HOME / ".config/Claude/claude_desktop_config.json"),
        ("claude-desktop", "Linux", {"XDG_CONFIG_HOME": "/xdg"}, Path("/xdg/Claude/claude_desktop_config.json")),
        ("claude-code", "Darwin", {}, HOME / ".claude.json"),
        ("claude-code", "Windows", {"APPDATA": "C:/R"}, HOME / ".claude.json"),
        ("claude-code", "Linux", {"CLAUDE_CONFIG_DIR": "/cc"}, Path("/cc/.claude.json")),
        ("cursor", "Darwin", {}, HOME / ".cursor/mcp.json"),
        ("cursor", "Windows", {"APPDATA": "C:/R"}, HOME / ".cursor/mcp.json"),
        ("cursor", "Linux", {}, HOME / ".cursor/mcp.json"),
        ("vscode", "Darwin", {}, HOME / "Library/Application Support/Code/User/mcp.json"),
        ("vscode", "Windows", {"APPDATA": "C:/R"}, Path("C:/R/Code/User/mcp.json")),
        ("vscode", "Linux", {}, HOME / ".config/Code/User/mcp.json"),
    ],
)
def test_each_client_config_is_found_where_that_client_keeps_it_on_each_os(
    client: str, system: str, env: dict[str, str], expected: Path
) -> None:
    assert default_config_path(client, system, HOME, env) == expected


def test_the_example_claude_desktop_config_is_a_working_entry() -> None:
    example = Path(__file__).resolve().parents[2] / "claude_desktop_config.example.json"
    entry = json.loads(example.read_text(encoding="utf-8"))["mcpServers"]["pastchats"]
    assert entry["command"] == "pastchats"
    result = CliRunner(env=entry.get("env", {})).invoke(cli, [*entry["args"], "--help"])
    assert result.exit_code == 0, result.output
    assert "Run the MCP server" in result.stdout


# ---- file modes: setup never lets more people read a client's config ----------------------------------


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The umask most users have (0o022): what setup writes must be private without help from it."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("kept", [0o600, 0o640, 0o644], ids=oct)
def test_setup_keeps_the_configs_mode_and_its_backup_has_the_same(
    kept: int, tmp_path: Path, permissive_umask: None
) -> None:
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(EXISTING["claude-code"]), encoding="utf-8")
    config.chmod(kept)  # Claude Code keeps ~/.claude.json 0600: it holds account identifiers
    result = write_entry("claude-code", config, {"command": "/usr/bin/pastchats", "args": ["serve"]})
    assert result.changed
    assert result.backup is not None
    assert mode(config) == kept
    assert mode(result.backup) == kept
    assert json.loads(result.backup.read_text(encoding="utf-8")) == EXISTING["claude-code"]
    assert [p.name for p in tmp_path.iterdir() if "pastchats-tmp" in p.name] == []


def test_setup_through_the_cli_keeps_a_0600_config_0600(tmp_path: Path, permissive_umask: None) -> None:
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(EXISTING["claude-code"]), encoding="utf-8")
    config.chmod(0o600)
    result = setup(config, "claude-code")
    assert result.exit_code == 0, result.output
    assert mode(config) == 0o600
    assert [mode(backup) for backup in tmp_path.glob(".claude.json.*.bak")] == [0o600]


def test_a_config_setup_creates_is_owner_only_and_so_is_its_new_folder(tmp_path: Path, permissive_umask: None) -> None:
    config = tmp_path / "new" / "mcp.json"
    result = write_entry("cursor", config, {"command": "/usr/bin/pastchats", "args": ["serve"]})
    assert result.changed
    assert result.backup is None
    assert mode(config) == 0o600
    assert mode(config.parent) == 0o700


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file to another user")
def test_setup_run_as_root_keeps_the_configs_owner(tmp_path: Path, permissive_umask: None) -> None:
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps(EXISTING["claude-code"]), encoding="utf-8")
    os.chown(config, 65534, 65534)
    config.chmod(0o600)
    result = write_entry("claude-code", config, {"command": "/usr/bin/pastchats", "args": ["serve"]})
    assert result.backup is not None
    for path in (config, result.backup):
        info = path.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (65534, 65534, 0o600)


def test_a_linked_config_is_written_where_the_link_points_and_keeps_its_mode(
    tmp_path: Path, permissive_umask: None
) -> None:
    kept = tmp_path / "dotfiles" / "claude.json"
    kept.parent.mkdir()
    kept.write_text(json.dumps(EXISTING["claude-code"]), encoding="utf-8")
    kept.chmod(0o600)
    link = tmp_path / ".claude.json"
    link.symlink_to(kept)
    write_entry("claude-code", link, {"command": "/usr/bin/pastchats", "args": ["serve"]})
    assert link.is_symlink()
    assert "pastchats" in json.loads(kept.read_text(encoding="utf-8"))["mcpServers"]
    assert mode(kept) == 0o600


def test_a_changed_entry_is_said_to_be_replaced_not_added(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    old = {"mcpServers": {"pastchats": {"command": "/old/bin/pastchats", "args": ["serve"]}}}
    config.write_text(json.dumps(old), encoding="utf-8")
    result = setup(config, "claude-desktop")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Replaced the pastchats entry in Claude Desktop's config: ")
    added = setup(tmp_path / "new.json", "claude-desktop")
    assert added.stdout.startswith("Added pastchats to Claude Desktop's config: ")


def test_setup_json_says_what_it_wrote_where(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    first = json.loads(setup(config, "cursor", "--json").stdout)
    assert first["client"] == "cursor"
    assert first["config"] == str(config)
    assert (first["changed"], first["replaced"], first["backup"]) == (True, False, None)
    assert first["entry"]["args"][-1] == "serve"
    second = json.loads(setup(config, "cursor", "--json").stdout)
    assert (second["changed"], second["replaced"]) == (False, False)
    printed = setup(tmp_path / "other.json", "cursor", "--print", "--json")
    assert json.loads(printed.stdout)["entry"] == first["entry"]
    assert not (tmp_path / "other.json").exists()
