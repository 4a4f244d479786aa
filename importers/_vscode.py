"""What every editor built on VS Code shares: where its user folder is on each platform, and how a
workspace folder is named (a `file:` URI in `workspaceStorage/<id>/workspace.json`).

VS Code, its Insiders build, VSCodium, Cursor and Windsurf each keep a `User` folder in the platform's
config folder (`~/.config` on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on Windows);
VS Code's server, which runs the extensions of a remote window, keeps one in `~/.vscode-server/data`.
Extensions keep their files in `User/globalStorage/<publisher.name>/`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

from importers._common import as_dict, as_str, env_folder

__all__ = ["EDITORS", "config_root", "file_uri_path", "uri_path", "user_folders", "workspace_folder"]

# The editors whose chat extensions pastchats reads, by the folder name of their user data.
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_DRIVE = re.compile(r"^/[A-Za-z]:")


def config_root(env: Mapping[str, str], home: Path, platform: str | None = None) -> Path:
    """The folder editors keep their user data in: `%APPDATA%`, `~/Library/Application Support`, or
    `$XDG_CONFIG_HOME` (default `~/.config`). `platform`: this machine's unless given."""
    platform = platform or sys.platform
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith(("win", "cygwin")):
        return env_folder(env, "APPDATA", home, "AppData", "Roaming")
    return env_folder(env, "XDG_CONFIG_HOME", home, ".config")


def user_folders(env: Mapping[str, str], home: Path, platform: str | None = None) -> list[Path]:
    """Every editor's `User` folder on this platform, and VS Code server's (remote windows)."""
    root = config_root(env, home, platform)
    return [root / editor / "User" for editor in EDITORS] + [home / ".vscode-server" / "data" / "User"]


def file_uri_path(uri: str) -> str:
    """A `file:` URI as the path the editor shows (VS Code's `fsPath`): `file:///c%3A/Users/ana/vite`
    is `c:\\Users\\ana\\vite`, `file://server/share/x` is `\\\\server\\share\\x`; other URIs as they are."""
    if not uri.startswith("file:"):
        return uri
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    if parsed.netloc:
        return "\\\\" + parsed.netloc + path.replace("/", "\\")
    if _DRIVE.match(path):
        return (path[1].lower() + path[2:]).replace("/", "\\")
    return path


def uri_path(value: object) -> str:
    """The path of a URI as VS Code stores it: a string, or its JSON form (`fsPath`, `external`, `path`)."""
    if isinstance(value, str):
        return file_uri_path(value)
    uri = as_dict(value)
    if as_str(uri.get("fsPath")):
        return as_str(uri["fsPath"])
    if as_str(uri.get("external")):
        return file_uri_path(as_str(uri["external"]))
    path = as_str(uri.get("path"))
    scheme = as_str(uri.get("scheme")) or "file"
    return file_uri_path(f"file://{path}") if scheme == "file" and path else path


def workspace_folder(directory: Path) -> str | None:
    """The folder (or `.code-workspace` file) a `workspaceStorage/<id>` folder belongs to."""
    try:
        data = as_dict(json.loads((directory / "workspace.json").read_text("utf-8")))
    except (OSError, ValueError):
        return None
    folder = as_str(data.get("folder")) or as_str(data.get("workspace"))
    return file_uri_path(folder) or None
