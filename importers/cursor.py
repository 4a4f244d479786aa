"""Cursor's chat history, kept in SQLite `state.vscdb` files under `Cursor/User/` (`globalStorage/`
and `workspaceStorage/<id>/`). A path may be one `state.vscdb` or a folder holding some.

Where chats live has moved between Cursor versions, so every place is read:
- current: the `cursorDiskKV` table, `composerData:<composerId>` listing the bubbles in order
  (`fullConversationHeadersOnly`) with each body under `bubbleId:<composerId>:<bubbleId>`;
- late 2024: the composer's bubbles inline, as `conversation`, in that same `composerData` row or in
  the workspace's `ItemTable` row `composer.composerData` (`allComposers[].conversation[]`);
- older: chat tabs in `ItemTable` under `workbench.panel.aichat.view.aichat.chatdata`.
Bubble type 1 / "user" is the user, 2 / "ai" the assistant. A bubble's time is its `createdAt`, else
`timingInfo.clientRpcSendTime` / `clientSettleTime` / `clientEndTime` (epoch milliseconds);
`clientStartTime` is a timer since the window opened, not a date, and is never used. Times before
2000 or in the future are dropped as not being dates. `aiService.prompts` / `aiService.generations`
hold only the prompts typed, without replies: a database holding nothing else is reported as such.
A bubble's `toolFormerData` is a tool call only when it names the tool (May 2025 databases put an
empty one on user bubbles and on assistant bubbles that called nothing).
The project is the workspace folder (as Cursor shows it: `c:\\Users\\ana\\vite` on Windows), found
through each workspace's `workspace.json` and its composer list, or Cursor 2026's global composer
list. A workspace database whose chats were read from the global one is not reported as skipped.
Databases are opened read-only; if Cursor holds a lock, as an immutable snapshot.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from importers._common import (
    RECORD_ERRORS,
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    count_unknown,
    note_unknown,
    parse_time,
    summarise_tool_call,
    system_folders,
)
from importers._files import walk_files
from importers._sqlite import connect, is_sqlite, json_value, table_names
from importers._touches import VERBS, touches_of
from importers._vscode import config_root
from importers.base import AgentLogImporter, ImportReport, SourceError
from importers.cursor_store import (
    CHATDATA,
    COMPOSERS,
    DB_NAME,
    composer_headers,
    context_files,
    header_names,
    item,
    listed_composers,
    why_empty,
    workspace_projects,
)
from storage.models import Action, Conversation, Role, Touch

_BUBBLE_ROLES: dict[object, Role] = {1: "user", 2: "assistant", "user": "user", "ai": "assistant"}
_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


def default_locations(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
    """Cursor's `User` folder for the platform (macOS, Windows `%APPDATA%`, else XDG config)."""
    user = config_root(env, home, platform) / "Cursor" / "User"
    return [user / "globalStorage" / DB_NAME, user / "workspaceStorage"]


class CursorImporter(AgentLogImporter):
    name = "cursor"
    variables = system_folders("XDG_CONFIG_HOME", "APPDATA")
    database = True  # SQLite: copied with the backup API, and re-read whole whenever it (or its WAL) changes

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home, platform)

    def session_files(self, folder: Path) -> list[Path]:
        return sorted(f for f in walk_files(folder, 3) if f.name == DB_NAME)

    def context_files(self, session: Path) -> list[Path]:
        return context_files(session)

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.suffix == ".vscdb" and is_sqlite(path)
        return path.is_dir() and any(f.name == DB_NAME for f in walk_files(path, 2))

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        databases = [path] if path.is_file() else self.session_files(path)
        if not databases:
            raise SourceError(f"no Cursor databases ({DB_NAME}) under {path}")
        seen: set[str] = set()
        unknown: UnknownCounts = {}
        opened = 0
        empty: list[tuple[str, str, set[str], str]] = []  # (where, why, the chats it lists, its storage id)
        headed: dict[str, set[str]] = {}  # workspace storage id → its chats, from Cursor 2026's global list
        for database in databases:
            where = str(database.relative_to(path)) if database != path else database.name
            try:
                connection = connect(database)
            except sqlite3.Error as exc:
                report.skip(where, f"cannot open the database: {exc}")
                continue
            opened += 1
            found = 0
            try:
                projects = workspace_projects(database, connection)
                for composer_id, workspace in composer_headers(connection).items():
                    headed.setdefault(as_str(workspace.get("id")), set()).add(composer_id)
                for conversation in _read_database(connection, projects, where, report, unknown):
                    found += 1
                    if conversation.id not in seen:  # the same chat can be in a copy of a database
                        seen.add(conversation.id)
                        yield conversation
                if not found:
                    empty.append((where, why_empty(connection), listed_composers(connection), database.parent.name))
            except sqlite3.Error as exc:
                report.skip(where, f"the database could not be read to the end: {exc}")
            finally:
                connection.close()
        for where, why, listed, storage_id in empty:
            # A workspace's chats are listed by it (or, since 2026, by the global database) and kept in
            # the global database: when that was read here too, they were imported from it.
            listed |= headed.get(storage_id, set())
            if not listed or not {f"cursor:{composer}" for composer in listed} <= seen:
                report.skip(where, why)
        note_unknown(report, unknown)
        if not opened:
            raise SourceError(f"none of the Cursor databases under {path} could be opened")


def _read_database(
    connection: sqlite3.Connection,
    projects: dict[str, str],
    where: str,
    report: ImportReport,
    unknown: UnknownCounts,
) -> Iterator[Conversation]:
    tables = table_names(connection)
    if "cursorDiskKV" in tables:
        names = header_names(connection)
        rows = connection.execute("SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%'")
        for key, value in rows.fetchall():
            composer_id = str(key).split(":", 1)[1]
            data = json_value(value)
            if isinstance(data, dict) and not as_str(data.get("name")) and names.get(composer_id):
                data["name"] = names[composer_id]  # Cursor 2026 keeps the name in its global list
            try:
                yield _composer(connection, composer_id, data, projects, report, unknown)
            except Unusable as exc:
                report.skip(f"{where}, composer {composer_id}", str(exc))
            except RECORD_ERRORS as exc:
                report.skip(f"{where}, composer {composer_id}", f"malformed composer: {exc}")
    if "ItemTable" in tables:
        for number, composer in enumerate(as_list(item(connection, COMPOSERS).get("allComposers")), start=1):
            composer = as_dict(composer)
            if not isinstance(composer.get("conversation"), list):
                continue  # listed only: the bubbles are in globalStorage (read there)
            composer_id = as_id(composer.get("composerId")) or f"#{number}"
            try:
                yield _composer(connection, composer_id, composer, projects, report, unknown)
            except Unusable as exc:
                report.skip(f"{where}, composer {composer_id}", str(exc))
            except RECORD_ERRORS as exc:
                report.skip(f"{where}, composer {composer_id}", f"malformed composer: {exc}")
        row = connection.execute("SELECT value FROM ItemTable WHERE key = ?", (CHATDATA,)).fetchone()
        for number, tab in enumerate(as_list(as_dict(json_value(row[0] if row else None)).get("tabs")), start=1):
            try:
                yield _tab(as_dict(tab), projects.get(""), report, unknown)
            except Unusable as exc:
                report.skip(f"{where}, chat tab #{number}", str(exc))
            except RECORD_ERRORS as exc:
                report.skip(f"{where}, chat tab #{number}", f"malformed chat tab: {exc}")


def _composer(
    connection: sqlite3.Connection,
    composer_id: str,
    data: object,
    projects: dict[str, str],
    report: ImportReport,
    unknown: UnknownCounts,
) -> Conversation:
    if not isinstance(data, dict):
        raise Unusable("composer data is not a JSON object")
    composer_id = as_id(data.get("composerId")) or composer_id
    bubbles: list[dict[str, Any]] = []
    missing = 0
    headers = as_list(data.get("fullConversationHeadersOnly"))
    for header in headers:
        bubble_id = as_id(as_dict(header).get("bubbleId"))
        row = connection.execute(
            "SELECT value FROM cursorDiskKV WHERE key = ?", (f"bubbleId:{composer_id}:{bubble_id}",)
        ).fetchone()
        body = as_dict(json_value(row[0]) if row else None)
        if not body:
            missing += 1
            continue
        bubbles.append({"bubbleId": bubble_id, "type": as_dict(header).get("type"), **body})
    if not headers:
        bubbles = [as_dict(bubble) for bubble in as_list(data.get("conversation"))]
    if missing:
        report.note("some Cursor messages had no stored body and were left out")
    return build_conversation(
        id=f"cursor:{composer_id}",
        source="cursor",
        turns=[turn for bubble in bubbles if (turn := _bubble_turn(bubble, unknown)) is not None],
        report=report,
        title=as_str(data.get("name")),
        created_at=_date(data.get("createdAt")),
        updated_at=_date(data.get("lastUpdatedAt")),
        project=projects.get(composer_id) or projects.get(""),
    )


def _bubble_turn(bubble: dict[str, Any], unknown: UnknownCounts) -> Turn | None:
    role = _BUBBLE_ROLES.get(bubble.get("type"))
    if role is None:
        count_unknown(unknown, str(bubble.get("type")), "messages", "bubble type")
        return None
    text = as_str(bubble.get("text")) or as_str(bubble.get("rawText"))
    tool = as_dict(bubble.get("toolFormerData"))
    touched: tuple[Touch, ...] = ()
    if as_str(tool.get("name")).strip():  # an unnamed record is an empty placeholder, not a call
        call = summarise_tool_call(as_str(tool.get("name")), tool.get("rawArgs"))
        text = f"{text}\n\n{call}" if text.strip() else call
        touched = touches_of(as_str(tool.get("name")), tool.get("rawArgs") or tool.get("params"), _VERBS)
    timing = as_dict(bubble.get("timingInfo"))
    when = _date(bubble.get("createdAt")) or next(
        (moment for key in _TIMING_KEYS if (moment := _date(timing.get(key))) is not None), None
    )
    return Turn(as_id(bubble.get("bubbleId")) or as_id(bubble.get("id")), role, text, when, touched)


# Cursor's own names for its file tools, beside the ones agents share.
_VERBS: Mapping[str, Action] = {
    **VERBS,
    "read_file_v2": "read",
    "edit_file_v2": "edited",
    "search_replace": "edited",
    "apply_patch": "edited",
    "delete_file": "edited",
    "run_terminal_command_v2": "ran",
}


_TIMING_KEYS = ("clientRpcSendTime", "clientSettleTime", "clientEndTime")


def _date(value: object) -> datetime | None:
    """A time Cursor recorded as a date; counters and zeros (dates before 2000, or ahead of now) are not."""
    moment = parse_time(value)
    if moment is None or moment < _EARLIEST or moment > datetime.now(UTC) + timedelta(days=1):
        return None
    return moment


def _tab(tab: dict[str, Any], project: str | None, report: ImportReport, unknown: UnknownCounts) -> Conversation:
    tab_id = as_id(tab.get("tabId"))
    if not tab_id:
        raise Unusable("no tabId")
    turns = [t for bubble in as_list(tab.get("bubbles")) if (t := _bubble_turn(as_dict(bubble), unknown)) is not None]
    return build_conversation(
        id=f"cursor:{tab_id}",
        source="cursor",
        turns=turns,
        report=report,
        title=as_str(tab.get("chatTitle")),
        updated_at=_date(tab.get("lastSendTime")),
        project=project,
    )
