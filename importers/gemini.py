"""Gemini CLI chat recordings: `<gemini home>/tmp/<project hash or slug>/chats/session-*.jsonl`
(current) and `session-*.json` (legacy, one document). Since March 2026 a subagent's recording is
`chats/<parent session id>/<its own session id>.json[l]` (`"kind": "subagent"`); it is a chat of its
own, titled after its task. Any file whose first record is a session's metadata (`sessionId` and
`projectHash`) is a recording, whatever its name.

The JSONL file is an upsert log, replayed as Gemini CLI replays it: a record with an `id` adds or
replaces that message (in its first position), `{"$set": {...}}` updates the metadata and
`{"$rewindTo": id}` drops that message and everything after it (an unknown id drops everything).
`user` and `gemini` records are the conversation; `info`/`error`/`warning` are CLI status lines and
are skipped; thoughts are skipped; tool calls become one short line, their results another.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse
from urllib.request import url2pathname

from importers._common import (
    Turn,
    UnknownCounts,
    Unusable,
    as_dict,
    as_id,
    as_list,
    as_str,
    build_conversation,
    convert_each,
    count_unknown,
    env_folder,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, read_head, read_regular
from importers._touches import touches_of
from importers.base import AgentLogImporter, ImportReport, SourceError
from storage.models import Conversation, Touch

_STATUS_TYPES = {"info", "error", "warning"}
PROJECT_ROOT_FILE = ".project_root"
_HASH = re.compile(r"[0-9a-f]{64}")
_UUID_NAME = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH_FIELD = re.compile(r'"projectHash"\s*:\s*"([0-9a-f]{64})"')


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """`~/.gemini/tmp`; `GEMINI_CLI_HOME` replaces the home directory that holds `.gemini`."""
    return [env_folder(env, "GEMINI_CLI_HOME", home) / ".gemini" / "tmp"]


class GeminiImporter(AgentLogImporter):
    name = "gemini"
    # `--resume` takes a session's `sessionId` (or "latest", or a number in the list) among the recordings
    # of the project the command runs in: it runs in the session's folder.
    resume: ClassVar[tuple[str, ...]] = ("gemini", "--resume", "{session}")
    variables: ClassVar[Mapping[str, str]] = {
        "GEMINI_CLI_HOME": "the folder holding Gemini CLI's .gemini (default: the home folder)"
    }

    def default_locations(self, env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
        return default_locations(env, home)

    def session_id(self, conversation_id: str, url: str | None = None) -> str | None:
        """The recording's `sessionId`; a subagent's recording (`chats/<parent session id>/...`, its
        `url`) continues in its parent's session, which is the one Gemini CLI lists. None for a
        recording without one (named after its file), which Gemini CLI cannot find either."""
        if url and url.startswith("file:"):
            file = Path(url2pathname(urlparse(url).path))
            if file.parent.parent.name == "chats" and _UUID_NAME.fullmatch(file.parent.name):
                return file.parent.name
        session = conversation_id.partition(":")[2]
        return None if not session or session.startswith("session-") else session

    def session_files(self, folder: Path) -> list[Path]:
        """The live session files: those Gemini CLI migrated or copied elsewhere are left out."""
        return [file for file in _session_files(_root(folder)) if not _replaced(file)]

    def context_files(self, session: Path) -> list[Path]:
        return context_files(session)

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return _looks_like_session(path)
        return path.is_dir() and any_file(_root(path), 3, _looks_like_session)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else _session_files(_root(path))  # replaced ones too, to report them
        if not files:
            raise SourceError(f"no Gemini CLI sessions (chats/session-*.jsonl) under {path}")
        unknown: UnknownCounts = {}
        names: dict[Path, dict[str, str]] = {}
        current: list[Path] = []
        for file in files:
            if reason := _replaced(file):
                report.skip(str(file.relative_to(path)) if file != path else file.name, reason)
            else:
                current.append(file)
        convert = lambda file: _convert(file, report, unknown, names)  # noqa: E731
        yield from convert_each(path, current, report, convert, "session")
        note_unknown(report, unknown)


def _root(path: Path) -> Path:
    """The folder of project folders: a Gemini home's `tmp`, or the path itself."""
    return path / "tmp" if (path / "tmp").is_dir() else path


def _looks_like_session(path: Path) -> bool:
    if path.suffix not in {".json", ".jsonl"}:
        return False
    head = read_head(path, 8192)
    return '"projectHash"' in head and '"sessionId"' in head


def _session_files(root: Path) -> list[Path]:
    """Recordings under `root`: `session-*.json[l]` in a `chats` folder (Gemini CLI's
    `tmp/<project>/chats`) or in the folder given, subagents' `chats/<parent>/*.json[l]`, and any
    other recording in the folder given. Other JSON under `tmp` (logs, checkpoints) is not a session."""
    found = (f for f in root.rglob("*.json*") if f.suffix in {".json", ".jsonl"})
    return sorted(f for f in found if _placed_as_session(f, root))


def _placed_as_session(file: Path, root: Path) -> bool:
    if file.name.startswith("session-") and (file.parent.name == "chats" or file.parent == root):
        return True
    if file.parent.parent.name == "chats" or file.parent == root:  # a subagent's, or one named by the user
        return _looks_like_session(file)
    return False


def _replaced(file: Path) -> str:
    """Why another file is Gemini CLI's live copy of this session ("" when this one is live)."""
    if file.suffix == ".json" and file.with_suffix(".jsonl").exists():
        return f"superseded by {file.stem}.jsonl (Gemini CLI migrated it)"
    if copy := _named_copy(file):
        return f"Gemini CLI copied it to {copy} when it moved to named project folders"
    return ""


def context_files(session: Path) -> list[Path]:
    """The files beside a session that name its project (the registry, the folders' root markers):
    kept with the session in the archive, so that a copy still resolves its project."""
    for folder in session.parents:
        if folder.parent.name == "tmp":
            tmp = folder.parent
            found = [tmp.parent / "projects.json", *tmp.glob(f"*/{PROJECT_ROOT_FILE}")]
            return sorted(path for path in found if path.is_file())
    return []


def _named_copy(file: Path) -> str:
    """The copy Gemini CLI made of a session in a hash folder when it named the project's folder
    (it copies the whole folder, subagents' recordings included)."""
    project = next((folder for folder in file.parents if folder.parent.name == "tmp"), None)
    if project is None or not _HASH.fullmatch(project.name):
        return ""
    inside = file.relative_to(project)
    if inside.parts[:1] != ("chats",):
        return ""
    for copy in sorted(project.parent.glob(f"*/{inside.as_posix()}")):
        folder = copy.relative_to(project.parent).parts[0]
        if not _HASH.fullmatch(folder):
            return f"tmp/{folder}"
    return ""


def _replay(file: Path, report: ImportReport) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metadata, message records) as they stand at the end of the file."""
    if file.suffix == ".json":
        try:
            document = as_dict(json.loads(read_regular(file).decode("utf-8", "replace").lstrip("\ufeff")))
        except ValueError as exc:
            raise Unusable(f"not valid JSON ({exc})") from None
        return document, [as_dict(m) for m in as_list(document.get("messages"))]
    meta: dict[str, Any] = {}
    records: dict[str, dict[str, Any]] = {}
    for _, record in iter_jsonl(file, report):
        record = as_dict(record)
        if isinstance(record.get("$rewindTo"), str):
            ids = list(records)
            target = record["$rewindTo"]
            for dropped in ids[ids.index(target) :] if target in records else ids:
                del records[dropped]
        elif isinstance(record.get("id"), str):
            records[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            meta.update(record["$set"])
        elif "sessionId" in record:
            meta.update(record)
    # `$set.messages` carries the model's context (it is rewritten on compression); only when the
    # file has no message records of its own is it the conversation.
    return meta, list(records.values()) or [as_dict(m) for m in as_list(meta.get("messages"))]


def _convert(
    file: Path, report: ImportReport, unknown: UnknownCounts, names: dict[Path, dict[str, str]]
) -> Conversation:
    meta, records = _replay(file, report)
    session = as_id(meta.get("sessionId")) or file.stem
    turns: list[Turn] = []
    for record in records:
        turns.extend(_turns(record, unknown))
    title = as_str(meta.get("summary"))
    if not title and meta.get("kind") == "subagent":
        title = f"Subagent: {next((t.text for t in turns if t.role == 'user'), '')}"
    return build_conversation(
        id=f"gemini:{session}",
        source="gemini",
        turns=turns,
        report=report,
        title=title,
        created_at=parse_time(meta.get("startTime")),
        updated_at=parse_time(meta.get("lastUpdated")),
        project=_project(file, meta, names),
        url=report.original(file).as_uri(),
        fallback_time=file_time(file),
    )


def _turns(record: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    kind = as_str(record.get("type"))
    key, when = as_id(record.get("id")), parse_time(record.get("timestamp"))
    if kind == "user":
        # `displayContent` is what the user typed when `content` differs (files pulled in by @path)
        shown = record.get("displayContent")
        return [Turn(key, "user", _content_text(shown if shown else record.get("content")), when)]
    if kind != "gemini":
        if kind not in _STATUS_TYPES:
            count_unknown(unknown, kind)
        return []
    lines = [_content_text(record.get("content"))]
    results: list[Turn] = []
    touched: list[Touch] = []
    for number, call in enumerate(as_list(record.get("toolCalls"))):
        call = as_dict(call)
        lines.append(summarise_tool_call(as_str(call.get("name")), call.get("args")))
        touched += touches_of(as_str(call.get("name")), call.get("args"))
        output = _tool_output(call)
        if output is not None:
            error = as_str(call.get("status")) in {"error", "cancelled"}
            results.append(Turn(f"{key}:tool{number}", "tool", summarise_tool_result(output, error=error), when))
    text = "\n\n".join(line for line in lines if line.strip())
    return [Turn(key, "assistant", text, when, tuple(touched)), *results]


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(as_str(as_dict(part).get("text")) for part in as_list(content))


def _tool_output(call: dict[str, Any]) -> str | None:
    """What the tool returned. `result` holds what the model was sent (the file read, the command's
    output); `resultDisplay` is the CLI's own line for the screen, often empty (a whole-file read
    shows nothing) or an object (a diff), so it is only the fallback."""
    outputs = []
    for part in as_list(call.get("result")):
        part = as_dict(part)
        response = as_dict(as_dict(part.get("functionResponse")).get("response"))
        for key in ("output", "error", "content"):
            if as_str(response.get(key)).strip():
                outputs.append(as_str(response[key]))
                break
        if as_str(part.get("text")).strip():
            outputs.append(as_str(part["text"]))
    if outputs:
        return "\n".join(outputs)
    display = call.get("resultDisplay")
    if isinstance(display, dict):  # an edit shown as a diff
        display = as_str(display.get("fileDiff")) or as_str(display.get("fileName"))
    if isinstance(display, str) and display.strip():
        return display
    return "" if "result" in call or "resultDisplay" in call else None


def _project(file: Path, meta: dict[str, Any], names: dict[Path, dict[str, str]]) -> str | None:
    """The project's directory as Gemini CLI's own records name it, else the hash it files it under.

    Sessions live under `tmp/<id>/`: a sha256 of the project root (before February 2026) or a short
    slug from the registry `~/.gemini/projects.json` (`{"projects": {root: slug}}`), whose folder
    holds a `.project_root` file naming the root. A hash folder is resolved through the registry's
    roots, and through any slug folder holding a session with the same `projectHash` (Gemini CLI
    copies a hash folder to its slug when it meets the project again).
    """
    project_hash = as_str(meta.get("projectHash"))
    for folder in file.parents:
        if folder.parent.name == "tmp":
            known = names.setdefault(folder.parent, _known_projects(folder.parent))
            return known.get(folder.name) or known.get(project_hash) or _first_directory(meta) or project_hash or None
    return _first_directory(meta) or project_hash or None


def _known_projects(tmp: Path) -> dict[str, str]:
    """Folder name or project hash → project root, from everything Gemini CLI keeps about projects."""
    known: dict[str, str] = {}

    def add(key: str, root: str) -> None:
        if key and root:
            known.setdefault(key, root)
            known.setdefault(hashlib.sha256(root.encode("utf-8", "replace")).hexdigest(), root)

    try:
        registry = as_dict(json.loads((tmp.parent / "projects.json").read_text("utf-8", "replace")).get("projects"))
    except (OSError, ValueError, AttributeError):
        registry = {}
    for root, slug in registry.items():
        add(as_str(slug), root)
    for base in (tmp, tmp.parent / "history"):
        for marker in sorted(base.glob(f"*/{PROJECT_ROOT_FILE}")):
            try:
                add(marker.parent.name, marker.read_text("utf-8", "replace").strip())
            except OSError:
                continue
    # A hash named in a session under a folder whose root is known (Windows registry keys are
    # lower-cased, so their sha256 need not be the folder's hash).
    for folder, root in list(known.items()):
        if (tmp / folder).is_dir() and not _HASH.fullmatch(folder):
            for session in sorted((tmp / folder / "chats").glob("session-*.json*"))[:20]:
                found = _HASH_FIELD.search(read_head(session, 4096))
                if found:
                    known.setdefault(found.group(1), root)
    return known


def _first_directory(meta: dict[str, Any]) -> str:
    directories = as_list(meta.get("directories"))
    return as_str(directories[0]) if directories else ""
