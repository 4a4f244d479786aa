"""Kilo Code's tasks (`kilocode.kilo-code`, a fork of Roo Code) from its VS Code extension up to 5.x:
`<globalStorage>/kilocode.kilo-code/tasks/<task id>/ui_messages.json`, laid out and read as Roo
Code's (`importers.roo_code`). Kilo Code 7, rebuilt on OpenCode in 2026, keeps new sessions in
OpenCode's store instead (`~/.local/share/kilo/kilo.db`): that is the `kilo` format (`importers.kilo`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from importers._task_folders import TaskFolderImporter
from importers.roo_code import workspace_files, workspace_of


class KiloCodeImporter(TaskFolderImporter):
    name = "kilo-code"
    extension_ids = ("kilocode.kilo-code",)
    cline_line = False

    def context_files(self, session: Path) -> list[Path]:
        return workspace_files(session)

    def project(self, session: Path, messages: list[dict[str, Any]]) -> str | None:
        return workspace_of(session)
