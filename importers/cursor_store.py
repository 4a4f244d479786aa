"""Cursor's databases: opening them without disturbing a running Cursor, reading their keys, and
naming the workspace folder (the project) each chat belongs to.

A chat's workspace is found, in order, in the workspace database that lists it
(`composer.composerData`, up to 2025) or in the global list Cursor 2026 keeps instead,
`composer.composerHeaders` (`allComposers[].workspaceIdentifier`: the workspace's storage id and
its folder's URI)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from importers._common import as_dict, as_id, as_list, as_str
from importers._sqlite import connect, json_value, table_names
from importers._vscode import uri_path, workspace_folder

DB_NAME = "state.vscdb"
CHATDATA = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSERS = "composer.composerData"
HEADERS = "composer.composerHeaders"
_PROMPT_HISTORY = ("aiService.prompts", "aiService.generations")


def item(connection: sqlite3.Connection, key: str) -> dict[str, Any]:
    row = connection.execute("SELECT value FROM ItemTable WHERE key = ?", (key,)).fetchone()
    return as_dict(json_value(row[0] if row else None))


def why_empty(connection: sqlite3.Connection) -> str:
    """Why a database gave no chats, from what it does hold."""
    tables = table_names(connection)
    if "ItemTable" not in tables and "cursorDiskKV" not in tables:
        return "not a Cursor database (no ItemTable or cursorDiskKV table)"
    keys = set()
    if "ItemTable" in tables:
        found = connection.execute(
            "SELECT key FROM ItemTable WHERE key IN (?, ?, ?, ?)", (*_PROMPT_HISTORY, COMPOSERS, CHATDATA)
        )
        keys = {row[0] for row in found}
    listed = len(as_list(item(connection, COMPOSERS).get("allComposers"))) if COMPOSERS in keys else 0
    if listed:
        return (
            f"lists {listed} composer chat(s) whose messages are kept in globalStorage/state.vscdb; "
            "import Cursor's User folder to get them"
        )
    if keys & set(_PROMPT_HISTORY):
        return (
            "holds only Cursor's prompt history (aiService.prompts/generations: what was typed, no replies), "
            "not chats; the chats are in globalStorage/state.vscdb and the workspaces' composer data"
        )
    return "holds no Cursor chats (no composer data or chat tabs)"


def context_files(database: Path) -> list[Path]:
    """The `workspace.json` files that name the projects of a database's chats (its own, and for the
    global database every workspace's): kept with it in the archive, so a copy keeps its projects."""
    found = [database.parent / "workspace.json"]
    if database.parent.name == "globalStorage":
        found += (database.parent.parent / "workspaceStorage").glob("*/workspace.json")
    return sorted(path for path in found if path.is_file())


def workspace_projects(database: Path, connection: sqlite3.Connection | None = None) -> dict[str, str]:
    """composerId → workspace folder; the key "" is this database's own workspace, if it has one.
    `connection`: the database, open, for the global list of composers it may hold."""
    projects: dict[str, str] = {}
    own = workspace_folder(database.parent)
    if own:
        projects[""] = own
    if database.parent.name == "globalStorage":
        workspaces = database.parent.parent / "workspaceStorage"
        for workspace_db in sorted(workspaces.glob(f"*/{DB_NAME}")):
            folder = workspace_folder(workspace_db.parent)
            if folder:
                for composer_id in _workspace_composers(workspace_db):
                    projects.setdefault(composer_id, folder)
        for composer_id, workspace in composer_headers(connection).items():
            folder = uri_path(workspace.get("uri")) or workspace_folder(workspaces / as_str(workspace.get("id")))
            if folder and composer_id:
                projects.setdefault(composer_id, folder)
    return projects


def composer_headers(connection: sqlite3.Connection | None) -> dict[str, dict[str, Any]]:
    """composerId → its workspace (`{"id": storage id, "uri": folder}`) from Cursor 2026's global list."""
    if connection is None or "ItemTable" not in table_names(connection):
        return {}
    found: dict[str, dict[str, Any]] = {}
    for header in as_list(item(connection, HEADERS).get("allComposers")):
        header = as_dict(header)
        composer_id = as_id(header.get("composerId"))
        if composer_id:
            found[composer_id] = as_dict(header.get("workspaceIdentifier"))
    return found


def header_names(connection: sqlite3.Connection) -> dict[str, str]:
    """composerId → the name Cursor 2026's global list shows for it."""
    if "ItemTable" not in table_names(connection):
        return {}
    headers = (as_dict(header) for header in as_list(item(connection, HEADERS).get("allComposers")))
    return {as_id(h.get("composerId")): as_str(h.get("name")) for h in headers if as_str(h.get("name"))}


def listed_composers(connection: sqlite3.Connection) -> set[str]:
    """The composers a workspace database lists (their messages are in the global database)."""
    if "ItemTable" not in table_names(connection):
        return set()
    composers = as_list(item(connection, COMPOSERS).get("allComposers"))
    return {as_id(as_dict(c).get("composerId")) for c in composers} - {""}


def _workspace_composers(database: Path) -> list[str]:
    try:
        connection = connect(database)
        try:
            row = connection.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()
        finally:
            connection.close()
    except sqlite3.Error:
        return []
    composers = as_list(as_dict(json_value(row[0] if row else None)).get("allComposers"))
    return [as_id(as_dict(composer).get("composerId")) for composer in composers if isinstance(composer, dict)]
