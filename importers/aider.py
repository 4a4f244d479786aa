"""Aider's `.aider.chat.history.md`, kept in each repository.

Each `# aider chat started at YYYY-MM-DD HH:MM:SS` line starts a session; each session is one
conversation, with id `aider:<hash of the file's absolute path>:<start as written>`. Aider writes
that time in the machine's local time, so it is read in the importer's `tz` (the local zone unless
given) and stored as UTC. It is the only time the file holds: a session's times are its header's.

Roles follow how aider writes the file (`aider/io.py`): every line aider writes for the user is
`#### ` + the line and ends with a markdown hard break (two spaces); each prompt starts after a blank
line. Its own output (commands, edits applied, confirmations, `^C` notices) is `> ` + the line, also
ending with a hard break; these are kept as one shortened `tool` message per block. A reply is
written whole, as plain text, after it ends or is interrupted, so a code fence left open by an
interrupted reply cannot reach past it: the next `#### ` line is the user again. A `>>>>>>> REPLACE`
line is the reply's text (aider's own lines have a space after `>`). When an editor has stripped the
hard breaks, the prefixes alone decide, and `> ` lines inside a reply's open fence stay with it.
The project is the repository folder that holds the file.

Two things aider writes look like something else (aider 0.86, `aider/io.py`, `base_coder.py`):
- a confirmation answered for the user by an earlier "(A)ll / (S)kip all" is logged as a user line,
  `#### Add file to the chat? (Y)es/(N)o/… [Yes]: skip`, then again as aider's own `> ` line; it is
  not the user, and only aider's line is kept;
- a reasoning model's thinking is written into the reply between `<thinking-content-…>` tags (or the
  model's own `<think>` tags); it is not the answer and is left out, as aider leaves it out of the chat;
- in architect mode (`aider/coders/architect_coder.py`) the architect's answer is handed to the
  editor model as its prompt, which is logged as `#### ` lines like a typed one, right after the
  answer (and the "Edit the files?" confirmation); it is the same words, not the user's, and is left out.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime, tzinfo
from pathlib import Path
from typing import ClassVar

from importers._common import Turn, Unusable, build_conversation, expand_home, summarise_tool_result
from importers._files import read_head, read_regular
from importers._touches import file_touch, ran
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation, Role, Touch

HISTORY_FILE = ".aider.chat.history.md"
# The very first releases (May 2023) wrote "Aider" capitalised.
_SESSION = re.compile(r"^# [Aa]ider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[ \t]*\r?$", re.MULTILINE)
# The very first releases (May 2023) prefixed user lines "#### > ".
_USER = re.compile(r"^####(?: |$)")
_TOOL = re.compile(r"^>(?: |$)")
_HARD_BREAK = "  "
_FENCE = re.compile(r"^\s*(```|~~~)")
# `confirm_ask` with an answer already chosen for the group: "<question> (Y)es/(N)o/… [Yes]: <answer>"
_AUTO_ANSWER = re.compile(r"\(Y\)es/\(N\)o.*\[[^\]]*\]:\s*\S*\s*$")
# aider's own reasoning tag, `thinking-content-` and a fixed hex id, and `think` (its model settings')
_REASONING = re.compile(r"<(thinking-content-[0-9a-f]+|think)>.*?(?:</\1>|\Z)", re.DOTALL)


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """Aider keeps history per repository, so there is no one place: `AIDER_CHAT_HISTORY_FILE` if
    set, and the history file in the home directory. Repositories must be added explicitly."""
    locations = [home / HISTORY_FILE]
    configured = env.get("AIDER_CHAT_HISTORY_FILE", "").strip()
    if configured and (expand_home(configured, home).is_absolute()):
        locations.insert(0, expand_home(configured, home))
    return locations


class AiderImporter(AgentLogImporter):
    name = "aider"
    variables: ClassVar[Mapping[str, str]] = {
        "AIDER_CHAT_HISTORY_FILE": "Aider's chat history file, read besides ~/.aider.chat.history.md"
    }

    def __init__(self, tz: tzinfo | None = None) -> None:
        self.tz = tz

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home)

    def session_files(self, folder: Path) -> list[Path]:
        return [folder / HISTORY_FILE] if (folder / HISTORY_FILE).is_file() else []

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            return (path / HISTORY_FILE).is_file()
        if not path.is_file() or path.suffix.lower() != ".md":
            return False
        return path.name == HISTORY_FILE or _SESSION.match(read_head(path, 512).lstrip()) is not None

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        file = path / HISTORY_FILE if path.is_dir() else path
        try:
            text = read_regular(file).decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n")
        except OSError as exc:
            raise SourceError(f"cannot read {file}: {exc.strerror or exc}") from exc
        headers = list(_SESSION.finditer(text))
        if not headers:
            raise SourceError(f"{file.name} has no '# aider chat started at' lines; is it an aider history?")
        if text[: headers[0].start()].strip():
            report.skip(f"{file.name}, before the first session", "text outside any session")
        resolved = report.original(file)
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
            legacy = header.group(0).startswith("# Aider")
            try:
                yield build_conversation(
                    id=conversation_id,
                    source="aider",
                    turns=parse_session(text[header.end() : end], legacy=legacy),
                    report=report,
                    created_at=started,
                    updated_at=started,
                    project=str(resolved.parent),
                    url=resolved.as_uri(),
                )
            except Unusable as exc:
                report.skip(f"{file.name}, session at {stamp}", str(exc))


# What aider says it did, in its own lines: the files it edited, created or was given, the commands it
# ran (its `/run` and its lint and test commands).
_DID = re.compile(
    r"^(?:> )?(?:(Applied edit to)|(Creating empty file)|(Added)|(Running)) (.+?)(?:( to the chat))?[ \t]*$",
    re.MULTILINE,
)


def _touched(text: str) -> tuple[Touch, ...]:
    touches: list[Touch] = []
    for edited, created, added, running, target, to_chat in _DID.findall(text):
        if edited or created:
            touches.append(file_touch("edited" if edited else "created", target))
        elif added and to_chat:
            touches.append(file_touch("read", target))
        elif running:
            touches += ran(target)
    return tuple(touches)


def parse_session(body: str, *, legacy: bool = False) -> list[Turn]:
    """The messages of one session's text (everything after its header line)."""
    lines = body.split("\n")
    # Aider ends every line it writes for the user or itself with a hard break; if none of the
    # prefixed lines has one, something stripped trailing spaces and the prefixes alone must do.
    strict = any(line.endswith(_HARD_BREAK) for line in lines if _USER.match(line) or _TOOL.match(line))
    turns: list[Turn] = []
    role: Role | None = None
    block: list[str] = []
    fenced = False
    after_blank = True

    def flush() -> None:
        text = "\n".join(block).strip()
        whose = role
        if role == "user" and text == "<blank>":  # aider's marker for an empty prompt
            text = ""
        elif role == "user" and "\n" not in text and _AUTO_ANSWER.search(text):
            text = ""  # a confirmation aider answered itself; its `> ` line that follows says so
        elif role == "assistant":
            text = _REASONING.sub("", text).strip()
        if whose is not None and text:
            shown = summarise_tool_result(text, 500) if whose == "tool" else text
            turns.append(Turn("", whose, shown, touches=_touched(text) if whose == "tool" else ()))
        block.clear()

    for line in lines:
        kind = _line_kind(line, strict, fenced and role == "assistant")
        if kind is None:  # a blank line stays with the block it is in
            if block:
                block.append("")
            after_blank = True
            continue
        # Each prompt is written after a blank line; its own lines follow without one.
        if kind != role or (kind == "user" and after_blank):
            flush()
            role, fenced = kind, False
        after_blank = False
        if kind == "user":
            line = _unprefix(line, "####").rstrip()
            if legacy:
                line = line.removeprefix("> ")
        elif kind == "tool":
            line = _unprefix(line, ">").rstrip()
        elif _FENCE.match(line):
            fenced = not fenced
        block.append(line)
    flush()
    return _without_handoffs(turns)


def _without_handoffs(turns: list[Turn]) -> list[Turn]:
    """The turns without the architect's hand-offs: in architect mode aider gives the architect's
    answer to the editor model as its prompt and logs it as the user's (`#### ` lines) right after
    the answer itself; the user typed none of it."""
    kept: list[Turn] = []
    answer = ""
    for turn in turns:
        words = " ".join(_REASONING.sub("", turn.text).split())
        if turn.role == "user" and answer and words == answer:
            continue
        if turn.role in {"user", "assistant"}:
            answer = words if turn.role == "assistant" else ""
        kept.append(turn)
    return kept


def _line_kind(line: str, strict: bool, in_fence: bool) -> Role | None:
    """Whose line this is, as aider's writer decides it; None for a blank line."""
    if not line.strip():
        return None
    written_by_aider = line.endswith(_HARD_BREAK) or not strict
    if _USER.match(line) and written_by_aider:
        return "user"
    if _TOOL.match(line) and written_by_aider and (strict or not in_fence):
        return "tool"
    return "assistant"


def _unprefix(line: str, prefix: str) -> str:
    rest = line[len(prefix) :]
    return rest[1:] if rest.startswith(" ") else rest
