"""`pastchats resume URI`, and a chat page's resume line: the command of the agent a chat came from that
continues its session in the session's folder (`importers.registry.resume_argv`), quoted for a POSIX
shell."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING

from importers.registry import resume_argv

if TYPE_CHECKING:
    from storage.library import Library


@dataclass(frozen=True)
class Resume:
    """How to continue one chat's session: `command` is a line to paste into a shell, or None with
    `reason` saying why there is none."""

    uri: str
    source: str
    folder: str | None  # the session's folder, when its agent recorded one
    command: str | None
    reason: str | None = None


def resume_command(library: Library, uri: str) -> Resume:
    """The resume line of the chat a uri names, whole or shortened (NotFound, AmbiguousUri)."""
    meta = library.chat(uri)
    argv = resume_argv(meta.source, meta.id, meta.url)
    if argv is None:
        reason = f"{meta.source} has no command that continues a past session, as far as pastchats knows"
        return Resume(meta.id, meta.source, None, None, reason)
    folder = meta.project if meta.project and _is_folder(meta.project) else None
    line = shlex.join(argv)
    return Resume(meta.id, meta.source, folder, f"cd {shlex.quote(folder)} && {line}" if folder else line)


def _is_folder(project: str) -> bool:
    """Whether a project is the session's folder (an absolute path) rather than a name a source gave."""
    return PurePosixPath(project).is_absolute() or PureWindowsPath(project).is_absolute()
