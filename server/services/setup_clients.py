"""`pastchats setup CLIENT`: our entry in an MCP client's own config file, merged in place.

Where each client keeps its user-level config (macOS; Windows; Linux), and its servers key:
- claude-desktop: ~/Library/Application Support/Claude/claude_desktop_config.json;
  %APPDATA%\\Claude\\claude_desktop_config.json; ~/.config/Claude/claude_desktop_config.json. `mcpServers`.
- claude-code, user scope: ~/.claude.json everywhere (in CLAUDE_CONFIG_DIR when set). `mcpServers`, typed.
- cursor: ~/.cursor/mcp.json everywhere. `mcpServers`.
- vscode, user profile: ~/Library/Application Support/Code/User/mcp.json; %APPDATA%\\Code\\User\\mcp.json;
  ~/.config/Code/User/mcp.json. `servers`, typed (`"type": "stdio"`).

Everything else in the file is kept as it was; the old file is backed up before it is replaced. The
file keeps its mode and owner (Claude Code keeps ~/.claude.json 0600: it holds account identifiers),
and so does its backup; a config this creates is owner-only. Setup never lets more people read a file.

`setup --remove` undoes it: the file as it was before the first setup (its bytes and mode, from the
oldest backup) when nothing else in it changed since, else the file with only our entry taken out; a
file setup created is deleted, with the folders made for it that are left empty; the backups go.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from storage.errors import PastchatsError
from storage.owner_only import make_folder

SERVER_NAME = "pastchats"
System = Literal["Darwin", "Windows", "Linux"]


class SetupError(PastchatsError):
    """The config cannot be read or written as it is; the message says what to do instead."""


@dataclass(frozen=True)
class ClientKind:
    name: str
    title: str
    servers_key: str
    typed: bool  # whether its entries carry `"type": "stdio"`


CLIENTS: dict[str, ClientKind] = {
    "claude-desktop": ClientKind("claude-desktop", "Claude Desktop", "mcpServers", typed=False),
    "claude-code": ClientKind("claude-code", "Claude Code", "mcpServers", typed=True),
    "cursor": ClientKind("cursor", "Cursor", "mcpServers", typed=False),
    "vscode": ClientKind("vscode", "VS Code", "servers", typed=True),
}


def default_config_path(client: str, system: str, home: Path, env: Mapping[str, str]) -> Path:
    """The user-level config file of `client` on `system` (platform.system()), given the user's home and
    the client's own location variables (APPDATA, XDG_CONFIG_HOME, CLAUDE_CONFIG_DIR)."""
    appdata = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    support = home / "Library" / "Application Support"
    if client == "claude-desktop":
        folder = {"Darwin": support, "Windows": appdata}.get(system, xdg)
        return folder / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        # Claude Code keeps its user-scope servers in .claude.json, inside CLAUDE_CONFIG_DIR when that is set.
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
        return base / ".claude.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        folder = {"Darwin": support, "Windows": appdata}.get(system, xdg)
        return folder / "Code" / "User" / "mcp.json"
    raise SetupError(f"unknown client {client!r}; one of: {', '.join(CLIENTS)}")


def executable() -> list[str]:
    """How a client should start this pastchats: the absolute path of its console script.

    The link a tool installer puts on PATH is kept unresolved, so that an upgrade does not break it.
    """
    argv0 = Path(sys.argv[0])
    if argv0.stem == "pastchats" and argv0.exists():
        return [str(argv0.absolute())]
    script = Path(sys.executable).parent / ("pastchats.exe" if os.name == "nt" else "pastchats")
    if script.exists():
        return [str(script)]
    found = shutil.which("pastchats")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "server.cli"]


def entry(client: str, command: list[str], args: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    kind = CLIENTS[client]
    value: dict[str, Any] = {"type": "stdio"} if kind.typed else {}
    value["command"] = command[0]
    value["args"] = [*command[1:], *args]
    if env:
        value["env"] = dict(env)
    return value


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SetupError(
            f"{path} is not plain JSON ({exc}); it may hold comments. It was left as it is: "
            "add the entry that `pastchats setup CLIENT --print` shows by hand."
        ) from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} does not hold a JSON object; it was left as it is")
    return data


def merged(client: str, config: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """`config` with our entry set, everything else kept in place and in order."""
    key = CLIENTS[client].servers_key
    servers = config.get(key)
    if servers is None:
        servers = {}
    if not isinstance(servers, dict):
        raise SetupError(f"the config's {key!r} is not a JSON object; it was left as it is")
    return {**config, key: {**servers, SERVER_NAME: ours}}


@dataclass(frozen=True)
class SetupResult:
    path: Path
    changed: bool
    backup: Path | None
    entry: dict[str, Any]
    replaced: bool = False  # an entry of ours was there, and differed


def write_entry(client: str, path: Path, ours: dict[str, Any], now: datetime | None = None) -> SetupResult:
    """Merge our entry into the file at `path`; nothing is written when it is already there."""
    config = read_config(path)
    updated = merged(client, config, ours)
    if path.exists() and updated == config:
        return SetupResult(path, False, None, ours)
    servers = config.get(CLIENTS[client].servers_key)
    replaced = isinstance(servers, dict) and SERVER_NAME in servers
    target = path.resolve() if path.is_symlink() else path  # a config kept elsewhere (dotfiles) stays there
    make_folder(target.parent)
    try:
        original: os.stat_result | None = target.stat()
    except FileNotFoundError:
        original = None
    backup = None
    if original is not None:
        stamp = (now or datetime.now(UTC)).strftime(BACKUP_STAMP)
        backup = target.with_name(f"{target.name}.{stamp}.bak")
        taken = 0
        while backup.exists():  # two setups within a second: the first backup is the one to keep
            taken += 1
            backup = target.with_name(f"{target.name}.{stamp}-{taken}.bak")
        _write_like(backup, target.read_bytes(), original)
    _write_like(target, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode(), original)
    return SetupResult(path, True, backup, ours, replaced)


BACKUP_STAMP = "%Y%m%dT%H%M%S"


def backups(target: Path) -> list[Path]:
    """The backups `setup` made of the config at `target`, oldest first."""
    pattern = re.compile(re.escape(target.name) + r"\.(\d{8}T\d{6})(?:-(\d+))?\.bak")
    if not target.parent.is_dir():
        return []
    found = [(match, path) for path in target.parent.iterdir() if (match := pattern.fullmatch(path.name))]
    return [path for match, path in sorted(found, key=lambda item: (item[0][1], int(item[0][2] or 0)))]


def without_entry(client: str, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with our entry taken out, and the servers key too when ours was all it held."""
    key = CLIENTS[client].servers_key
    servers = config.get(key)
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return config
    rest = {name: value for name, value in servers.items() if name != SERVER_NAME}
    if rest:
        return {**config, key: rest}
    return {name: value for name, value in config.items() if name != key}


@dataclass(frozen=True)
class RemoveResult:
    path: Path
    removed: bool  # our entry was there and is gone
    how: Literal["restored", "edited", "deleted", "unchanged"]
    backups: list[Path]  # the backups setup had made, now deleted


def remove_entry(client: str, path: Path, user_home: Path) -> RemoveResult:
    """Take our entry out of the config at `path`, leaving it as it was before `setup`."""
    target = path.resolve() if path.is_symlink() else path
    saved = backups(target)
    config = read_config(target) if target.exists() else {}
    servers = config.get(CLIENTS[client].servers_key)
    had_entry = isinstance(servers, dict) and SERVER_NAME in servers
    how: Literal["restored", "edited", "deleted", "unchanged"] = "unchanged"
    if had_entry:
        rest = without_entry(client, config)
        before = _readable(saved[0]) if saved else None
        key = CLIENTS[client].servers_key
        if before is not None and SERVER_NAME not in (before.get(key) or {}) and without_entry(client, before) == rest:
            # nothing but our entry changed since the first setup: the file it replaced, bytes and mode
            _write_like(target, saved[0].read_bytes(), saved[0].stat())
            how = "restored"
        elif not saved and not rest:  # setup created this file for our entry alone
            target.unlink()
            remove_empty_folders(target.parent, user_home)
            how = "deleted"
        else:
            _write_like(target, (json.dumps(rest, indent=2, ensure_ascii=False) + "\n").encode(), target.stat())
            how = "edited"
    for backup in saved:
        backup.unlink(missing_ok=True)
    return RemoveResult(path, had_entry, how, saved)


def _readable(path: Path) -> dict[str, Any] | None:
    try:
        return read_config(path)
    except SetupError:
        return None


def remove_empty_folders(folder: Path, user_home: Path) -> None:
    """Folders made to hold what pastchats removed, when that left them empty: never the home, nothing outside it."""
    home = user_home.absolute()
    folder = folder.absolute()
    while folder != home and home in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or not ours to remove
            return
        folder = folder.parent


def _write_like(target: Path, data: bytes, like: os.stat_result | None) -> None:
    """Write `target` whole or not at all, with the mode and owner of `like` (the file it replaces or
    backs up), or owner-only when there is none: written owner-only in the same folder, synced, given
    those, then renamed into place, so nobody can read it in between and no reader sees half of it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".pastchats-tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
            if like is not None and os.name != "nt":
                if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
                    with contextlib.suppress(PermissionError):  # only root may give a file away; it stays ours
                        os.fchown(file.fileno(), like.st_uid, like.st_gid)
                os.fchmod(file.fileno(), stat.S_IMODE(like.st_mode))
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def configured_entry(client: str, path: Path) -> dict[str, Any] | None:
    """Our entry in that config, if there is one (for `doctor`); None when absent or unreadable."""
    try:
        servers = read_config(path).get(CLIENTS[client].servers_key)
    except SetupError:
        return None
    found = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return found if isinstance(found, dict) else None
