"""Roo Code's tasks (`RooVeterinaryInc.roo-cline`, a fork of Cline): `<globalStorage>/rooveterinaryinc.roo-cline/
tasks/<task id>/ui_messages.json` in every VS Code-family editor. How a task folder is read:
`importers._task_folders`; the task the user typed is the first message, `say: "text"`.

The task's workspace is its history item's `workspace`: kept in the task's own `history_item.json`
since Roo Code 3.48 (February 2026), before that only in VS Code's state database; without it, the
`# Current Workspace Directory (…)` the first request in `api_conversation_history.json` names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from importers._common import as_dict, as_str
from importers._task_folders import API_HISTORY, TaskFolderImporter, read_json, workspace_in_history

HISTORY_ITEM = "history_item.json"


class RooCodeImporter(TaskFolderImporter):
    name = "roo-code"
    extension_ids = ("rooveterinaryinc.roo-cline",)
    cline_line = False

    def context_files(self, session: Path) -> list[Path]:
        return workspace_files(session)

    def project(self, session: Path, messages: list[dict[str, Any]]) -> str | None:
        return workspace_of(session)


def workspace_files(session: Path) -> list[Path]:
    """The file that names a task's workspace: its history item, else its history for the model."""
    for name in (HISTORY_ITEM, API_HISTORY):
        if (session.parent / name).is_file():
            return [session.parent / name]
    return []


def workspace_of(session: Path) -> str | None:
    item = as_dict(read_json(session.parent / HISTORY_ITEM))
    return as_str(item.get("workspace")) or workspace_in_history(session) or None
