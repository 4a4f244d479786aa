"""The formats pastchats reads, and which one reads a given path.

`IMPORTERS` is the one list of formats, in the order detection tries them: specific formats first,
the lenient plain format last. `AGENT_LOGS` lists the formats sync finds on this machine by itself, and
`AGENT_VARIABLES` the environment variables they honour, which the settings read and document.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

from importers._common import has_opt_out
from importers._files import not_regular_reason
from importers._safe import safe_conversations
from importers._task_folders import TaskFolderImporter
from importers.aider import AiderImporter
from importers.amazon_q import AmazonQImporter, KiroCliImporter
from importers.base import AgentLogImporter, Importer, ImportReport, SourceError
from importers.chatgpt import ChatGPTImporter
from importers.claude import ClaudeImporter
from importers.claude_code import ClaudeCodeImporter
from importers.cline import ClineImporter
from importers.cline_sdk import ClineSdkImporter
from importers.codex import CodexImporter
from importers.continue_dev import ContinueImporter
from importers.copilot_chat import CopilotChatImporter
from importers.copilot_cli import CopilotCliImporter
from importers.crush import CrushImporter
from importers.cursor import CursorImporter
from importers.cursor_agent import CursorAgentImporter
from importers.gemini import GeminiImporter
from importers.goose import GooseFilesImporter, GooseImporter
from importers.grok_cli import GrokCliImporter
from importers.kilo import KiloImporter
from importers.kilo_code import KiloCodeImporter
from importers.kimi import KimiCodeImporter, KimiImporter
from importers.mistral_vibe import MistralVibeImporter
from importers.opencode import OpenCodeFilesImporter, OpenCodeImporter
from importers.openhands import OpenHandsImporter, OpenHandsV0Importer
from importers.pi import PiImporter
from importers.plain import PlainImporter
from importers.qwen_code import QwenCodeImporter
from importers.roo_code import RooCodeImporter
from importers.zed import ZedImporter
from storage.models import Conversation

__all__ = [
    "AGENT_LOGS",
    "AGENT_VARIABLES",
    "IMPORTERS",
    "agent_log",
    "choose",
    "detect",
    "foreign_prefixes",
    "get",
    "names",
    "read",
    "resume_argv",
    "without_opted_out",
]

# Every agent whose logs sync finds on this machine by itself, one line each, in the order a folder
# given to sync is tried.
AGENT_LOGS: list[AgentLogImporter] = [
    # Before Claude Code: Qwen Code's records would pass Claude Code's looser test.
    OpenCodeImporter(),
    OpenCodeFilesImporter(),
    KiloImporter(),
    QwenCodeImporter(),
    ContinueImporter(),
    CrushImporter(),
    GooseImporter(),
    GooseFilesImporter(),
    ZedImporter(),
    CopilotCliImporter(),
    ClineSdkImporter(),
    AmazonQImporter(),
    KiroCliImporter(),
    PiImporter(),
    KimiImporter(),
    KimiCodeImporter(),
    MistralVibeImporter(),
    GrokCliImporter(),
    OpenHandsImporter(),
    OpenHandsV0Importer(),
    ClaudeCodeImporter(),
    CodexImporter(),
    GeminiImporter(),
    AiderImporter(),
    # Before Cursor's databases: a VS Code folder holds state.vscdb files too.
    CopilotChatImporter(),
    ClineImporter(),
    RooCodeImporter(),
    KiloCodeImporter(),
    CursorAgentImporter(),
    CursorImporter(),
]
# Each format once, in the order detection tries them: the chat-app exports, the agents, and the
# lenient plain format last.
IMPORTERS: list[Importer] = [ClaudeImporter(), ChatGPTImporter(), *AGENT_LOGS, PlainImporter()]


def _agent_variables() -> dict[str, str]:
    """Each variable the agents declare, once, with what it moves; one several agents honour names them."""
    described: dict[str, str] = {}
    honouring: dict[str, list[str]] = {}
    for importer in AGENT_LOGS:
        for variable, description in importer.variables.items():
            described.setdefault(variable, description)
            honouring.setdefault(variable, []).append(importer.name)
    return {
        variable: f"{description}, for {', '.join(honouring[variable])}"
        if len(honouring[variable]) > 1
        else description
        for variable, description in sorted(described.items())
    }


# Every environment variable an agent honours to move its files, with what it moves.
AGENT_VARIABLES: dict[str, str] = _agent_variables()


def names() -> list[str]:
    return [importer.name for importer in IMPORTERS]


def agent_log(name: str) -> AgentLogImporter:
    for importer in AGENT_LOGS:
        if importer.name == name:
            return importer
    raise SourceError(f"{name!r} is not an agent-log format; those are: {', '.join(i.name for i in AGENT_LOGS)}")


def foreign_prefixes(name: str) -> tuple[str, ...]:
    """The id prefixes of the formats other than `name` (every format's chat ids are `<format>:...`).

    An import from `name` may add a chat with such an id (a `pastchats export` restored through the
    plain format keeps its ids) but never replaces one the store holds: a plain record with the id
    `claude:<uuid>` cannot take over the real Claude.ai chat."""
    return tuple(f"{other}:" for other in names() if other != name)


def resume_argv(source: str, conversation_id: str, url: str | None = None) -> list[str] | None:
    """The command of the agent a chat came from that continues its session (`Importer.resume`, the
    session's id in place), or None when that agent has none (or the chat names no session)."""
    importer = next((i for i in IMPORTERS if i.name == source and i.resume), None)
    session = importer.session_id(conversation_id, url) if importer is not None else None
    if importer is None or session is None:
        return None
    return [session if word == "{session}" else word for word in importer.resume]


def get(name: str) -> Importer:
    for importer in IMPORTERS:
        if importer.name == name:
            return importer
    raise SourceError(f"unknown format {name!r}; known formats: {', '.join(names())}")


def detect(path: Path) -> Importer:
    """The importer of `path`'s format; SourceError when it is missing, unreadable or none pastchats reads."""
    _require_source(path)
    for importer in IMPORTERS:
        if importer.detect(path):
            return importer
    raise SourceError(f"cannot tell what kind of chat history {path} is; pass --format (one of: {', '.join(names())})")


def choose(path: Path, format: str | None = None) -> Importer:
    """The importer for `path`: the one named, unless the path looks like another format (SourceError
    naming it), else the detected one.

    Cheap (no file is parsed), so that a wrong path or format fails before the store and the model load.
    """
    if format is None:
        return detect(path)
    importer = get(format)
    _require_source(path)
    if importer.detect(path):
        return importer
    other = next((other for other in IMPORTERS if other is not importer and other.detect(path)), None)
    if other is None or (isinstance(importer, TaskFolderImporter) and isinstance(other, TaskFolderImporter)):
        # Detection reads only a file's first bytes; when no format claims them (a broken first
        # record), the format the user named reads the file and reports what it cannot. Cline and
        # its forks write one layout, and the marks that tell them apart are a guess the user overrules.
        return importer
    looks = other.name
    raise SourceError(
        f"{path} does not look like a {format} source; it looks like {looks} (use --format {looks}, "
        "or leave --format out to detect it)"
    )


def read(
    path: Path, format: str | None = None, *, origin: Path | None = None
) -> tuple[Iterator[Conversation], ImportReport]:
    """Open a source. The iterator streams conversations; the report fills in as it is consumed.
    `origin`: `path` is a copy of the file (or folder) its program wrote there (see `ImportReport`).

    Every conversation passes `importers._safe` here, for every format (ids normalised or rejected,
    text cleaned), and those holding the opt-out marker line are left out.
    """
    if format:
        _require_readable_kind(path)
    importer = get(format) if format else detect(path)
    report = ImportReport(path=path, format=importer.name, origin=origin)
    return without_opted_out(safe_conversations(importer.read(path, report), report), report), report


def _require_source(path: Path) -> None:
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    _require_readable_kind(path)


def _require_readable_kind(path: Path) -> None:
    """Only folders and regular files are sources: reading a FIFO or a device could block forever."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise SourceError(f"{path} is {not_regular_reason(mode)}: give a chat export file or folder")


def without_opted_out(conversations: Iterator[Conversation], report: ImportReport) -> Iterator[Conversation]:
    """Drop every conversation with the opt-out marker line in any message, saying so in the report.

    A source that gave nothing, and whose importer gave no reason, is said to be empty: an import
    never ends with nothing and no word why."""
    found = 0
    for conversation in conversations:
        found += 1
        if has_opt_out(conversation):
            report.skip(conversation.id, "opt-out marker")
            continue
        yield conversation
    if not found and not report.skipped:
        report.note(
            f"{report.path.name} holds no {report.format or 'chat'} conversations: nothing in it could be read as one"
        )
