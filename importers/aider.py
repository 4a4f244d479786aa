"""Aider's `.aider.chat.history.md`, kept in each repository.

Each `# aider chat started at YYYY-MM-DD HH:MM:SS` line starts a session; each session is one
conversation, with id `aider:<hash of the file's absolute path>:<start as written>`. Aider writes
that time in the machine's local time, so it is read in the importer's `tz` (the local zone unless
given) and stored as UTC. `#### ` lines are the user; `> ` lines are aider's own output (commands,
edits applied, confirmations): they are kept, as one shortened `tool` message per block, so a
failed command stays findable; everything else is the assistant. The project is the repository
folder that holds the file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from datetime import datetime, tzinfo
from pathlib import Path

from importers._common import Turn, Unusable, build_conversation, expand_home, summarise_tool_result
from importers._files import file_time, read_head
from importers.base import ImportReport, SourceError
from storage.models import Conversation, Role

HISTORY_FILE = ".aider.chat.history.md"
_SESSION = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$", re.MULTILINE)


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """Aider keeps history per repository, so there is no one place: `AIDER_CHAT_HISTORY_FILE` if
    set, and the history file in the home directory. Repositories must be added explicitly."""
    locations = [home / HISTORY_FILE]
    configured = env.get("AIDER_CHAT_HISTORY_FILE", "").strip()
    if configured and (expand_home(configured, home).is_absolute()):
        locations.insert(0, expand_home(configured, home))
    return locations


class AiderImporter:
    name = "aider"
    description = "Aider chat history (.aider.chat.history.md, or a repository folder holding one)"

    def __init__(self, tz: tzinfo | None = None) -> None:
        self.tz = tz

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            return (path / HISTORY_FILE).is_file()
        if not path.is_file() or path.suffix.lower() != ".md":
            return False
        return path.name == HISTORY_FILE or read_head(path, 512).lstrip().startswith("# aider chat started at")

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        file = path / HISTORY_FILE if path.is_dir() else path
        try:
            text = file.read_bytes().decode("utf-8", "replace").lstrip("\ufeff")
        except OSError as exc:
            raise SourceError(f"cannot read {file}: {exc.strerror or exc}") from exc
        headers = list(_SESSION.finditer(text))
        if not headers:
            raise SourceError(f"{file.name} has no '# aider chat started at' lines; is it an aider history?")
        if text[: headers[0].start()].strip():
            report.skip(f"{file.name}, before the first session", "text outside any session")
        resolved = file.resolve()
        file_hash = hashlib.blake2b(str(resolved).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        seen: set[str] = set()
        for number, header in enumerate(headers):
            stamp = header.group(1)
            end = headers[number + 1].start() if number + 1 < len(headers) else len(text)
            conversation_id = f"aider:{file_hash}:{stamp.replace(' ', 'T')}"
            while conversation_id in seen:
                conversation_id += "~"
            seen.add(conversation_id)
            try:
                started = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=self.tz)
                if self.tz is None:
                    started = started.astimezone()  # naive means local time here
            except ValueError:
                report.skip(f"{file.name}, session at {stamp}", "unreadable start time")
                continue
            last = number + 1 == len(headers)
            try:
                yield build_conversation(
                    id=conversation_id,
                    source="aider",
                    turns=_turns(text[header.end() : end]),
                    report=report,
                    created_at=started,
                    updated_at=max(started, file_time(file)) if last else started,
                    project=str(resolved.parent),
                    url=resolved.as_uri(),
                )
            except Unusable as exc:
                report.skip(f"{file.name}, session at {stamp}", str(exc))


def _line_role(line: str) -> Role | None:
    """Who a line belongs to, or None for a blank line (which stays with the block it is in)."""
    if line.startswith("####"):
        return "user"
    if line.startswith(">"):
        return "tool"
    return "assistant" if line.strip() else None


def _turns(body: str) -> list[Turn]:
    turns: list[Turn] = []
    role: Role | None = None
    lines: list[str] = []
    fenced = False

    def flush() -> None:
        if role is not None and lines:
            text = "\n".join(lines).strip()
            turns.append(Turn("", role, summarise_tool_result(text, 500) if role == "tool" else text))
        lines.clear()

    for line in body.split("\n"):
        kind = "assistant" if fenced and role == "assistant" else _line_role(line)
        if line.lstrip().startswith("```") and kind == "assistant":
            fenced = not fenced
        if kind is not None and kind != role:
            flush()
            role = kind
        # aider ends its own lines with two spaces (a markdown line break): not part of the text
        if role == "user":
            line = (line[5:] if line.startswith("#### ") else line.removeprefix("####")).rstrip()
        elif role == "tool":
            line = (line[2:] if line.startswith("> ") else line.removeprefix(">")).rstrip()
        lines.append(line)
    flush()
    return turns
