"""Cline's tasks (`saoudrizwan.claude-dev`), as its VS Code extension up to 4.1 and its CLI and JetBrains
hosts write them: `<globalStorage>/saoudrizwan.claude-dev/tasks/<task id>/ui_messages.json` in every
VS Code-family editor, and `~/.cline/data/tasks/<task id>/` (`$CLINE_DIR/data`, or `$CLINE_DATA_DIR`)
for the other hosts. How a task folder is read: `importers._task_folders`.

The task's workspace is the history list's `cwdOnTaskInitialization` (Cline 3.x, in
`<storage>/state/taskHistory.json`), else its `shadowGitConfigWorkTree` (the folder checkpoints track),
else the `# Current Working Directory (…)` the first request told the model, which the panel's
`api_req_started` message repeats and `api_conversation_history.json` keeps (a task copied out of
the extension's folder has only these).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from importers._common import as_dict, as_list, as_str, env_folder, expand_home
from importers._files import per_folder
from importers._task_folders import (
    TaskFolderImporter,
    first_request,
    read_json,
    workspace_in_environment,
    workspace_in_history,
)

HISTORY = Path("state") / "taskHistory.json"


def data_folder(env: Mapping[str, str], home: Path) -> Path:
    """Where Cline's CLI and JetBrains hosts keep their data: `$CLINE_DATA_DIR`, `$CLINE_DIR/data`, `~/.cline/data`."""
    if env.get("CLINE_DATA_DIR", "").strip():
        return expand_home(env["CLINE_DATA_DIR"], home)
    return env_folder(env, "CLINE_DIR", home, ".cline") / "data"


class ClineImporter(TaskFolderImporter):
    name = "cline"
    variables: ClassVar[Mapping[str, str]] = {
        **TaskFolderImporter.variables,
        "CLINE_DIR": "Cline's folder for its CLI and JetBrains hosts (default ~/.cline), whose data/ holds the tasks",
        "CLINE_DATA_DIR": "Cline's data folder, in place of CLINE_DIR/data",
    }
    extension_ids = ("saoudrizwan.claude-dev",)

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return [*super().default_locations(env, home, platform), data_folder(env, home) / "tasks"]

    def context_files(self, session: Path) -> list[Path]:
        history = session.parent.parent.parent / HISTORY
        return [history] if history.is_file() else []

    def project(self, session: Path, messages: list[dict[str, Any]]) -> str | None:
        task_id = session.parent.name
        data = session.parent.parent.parent  # its task list is read once per sync, not once per task
        for item in as_list(per_folder("cline history", data, lambda folder: read_json(folder / HISTORY))):
            item = as_dict(item)
            if as_str(item.get("id")) == task_id:
                folder = as_str(item.get("cwdOnTaskInitialization")) or as_str(item.get("shadowGitConfigWorkTree"))
                if folder:
                    return folder
        return workspace_in_environment(first_request(messages)) or workspace_in_history(session) or None
