"""Gemini CLI chat recordings: `<gemini home>/tmp/<project hash or slug>/chats/session-*.jsonl`
(current) and `session-*.json` (legacy, one document). Subagent logs nest under `chats/<parent>/`.

The JSONL file is an upsert log, replayed as Gemini CLI replays it: a record with an `id` adds or
replaces that message (in its first position), `{"$set": {...}}` updates the metadata and
`{"$rewindTo": id}` drops that message and everything after it (an unknown id drops everything).
`user` and `gemini` records are the conversation; `info`/`error`/`warning` are CLI status lines and
are skipped; thoughts are skipped; tool calls become one short line, their results another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

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
    expand_home,
    note_unknown,
    parse_time,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import any_file, file_time, iter_jsonl, read_head
from importers.base import ImportReport, SourceError
from storage.models import Conversation

_STATUS_TYPES = {"info", "error", "warning"}


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """`~/.gemini/tmp`; `GEMINI_CLI_HOME` replaces the home directory that holds `.gemini`."""
    configured = env.get("GEMINI_CLI_HOME", "").strip()
    base = expand_home(configured, home) if configured else home
    return [base / ".gemini" / "tmp"]


def looks_like_session(path: Path) -> bool:
    if not path.name.startswith("session-") or path.suffix not in {".json", ".jsonl"}:
        return False
    return '"projectHash"' in read_head(path, 8192)


class GeminiImporter:
    name = "gemini"
    description = "Gemini CLI chat recordings (~/.gemini/tmp/*/chats, a chats folder or one session file)"

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return looks_like_session(path)
        return path.is_dir() and any_file(_root(path), 3, looks_like_session)

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        files = [path] if path.is_file() else _session_files(_root(path))
        if not files:
            raise SourceError(f"no Gemini CLI sessions (chats/session-*.jsonl) under {path}")
        unknown: UnknownCounts = {}
        names: dict[Path, dict[str, str]] = {}
        current = []
        for file in files:
            if file.suffix == ".json" and file.with_suffix(".jsonl").exists():
                where = str(file.relative_to(path)) if file != path else file.name
                report.skip(where, f"superseded by {file.stem}.jsonl (Gemini CLI migrated it)")
            else:
                current.append(file)
        convert = lambda file: _convert(file, report, unknown, names)  # noqa: E731
        yield from convert_each(path, current, report, convert, "session")
        note_unknown(report, unknown)


def _root(path: Path) -> Path:
    return path / "tmp" if (path / "tmp").is_dir() else path


def _session_files(root: Path) -> list[Path]:
    found = [f for f in root.rglob("*.json*") if f.suffix in {".json", ".jsonl"} and "chats" in f.parts]
    if root.name == "chats" or not found:
        found = [f for f in root.rglob("*.json*") if f.suffix in {".json", ".jsonl"}]
    return sorted(found)


def _replay(file: Path, report: ImportReport) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metadata, message records) as they stand at the end of the file."""
    if file.suffix == ".json":
        try:
            document = as_dict(json.loads(file.read_bytes().decode("utf-8", "replace").lstrip("\ufeff")))
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
    return build_conversation(
        id=f"gemini:{session}",
        source="gemini",
        turns=turns,
        report=report,
        title=as_str(meta.get("summary")),
        created_at=parse_time(meta.get("startTime")),
        updated_at=parse_time(meta.get("lastUpdated")),
        project=_project(file, meta, names),
        url=file.resolve().as_uri(),
        fallback_time=file_time(file),
    )


def _turns(record: dict[str, Any], unknown: UnknownCounts) -> list[Turn]:
    kind = as_str(record.get("type"))
    key, when = as_id(record.get("id")), parse_time(record.get("timestamp"))
    if kind == "user":
        return [Turn(key, "user", _content_text(record.get("content")), when)]
    if kind != "gemini":
        if kind not in _STATUS_TYPES:
            count_unknown(unknown, kind)
        return []
    lines = [_content_text(record.get("content"))]
    results: list[Turn] = []
    for number, call in enumerate(as_list(record.get("toolCalls"))):
        call = as_dict(call)
        lines.append(summarise_tool_call(as_str(call.get("name")), call.get("args")))
        output = _tool_output(call)
        if output is not None:
            error = as_str(call.get("status")) == "error"
            results.append(Turn(f"{key}:tool{number}", "tool", summarise_tool_result(output, error=error), when))
    return [Turn(key, "assistant", "\n\n".join(line for line in lines if line.strip()), when), *results]


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(as_str(as_dict(part).get("text")) for part in as_list(content))


def _tool_output(call: dict[str, Any]) -> str | None:
    if isinstance(call.get("resultDisplay"), str):
        return str(call["resultDisplay"])
    outputs = []
    for part in as_list(call.get("result")):
        response = as_dict(as_dict(as_dict(part).get("functionResponse")).get("response"))
        outputs.append(as_str(response.get("output")) or as_str(response.get("error")))
    return " ".join(outputs) if outputs else None


def _project(file: Path, meta: dict[str, Any], names: dict[Path, dict[str, str]]) -> str | None:
    """The project's directory when it can be found, else the hash Gemini CLI files it under."""
    project_hash = as_str(meta.get("projectHash"))
    for folder in file.parents:
        if folder.parent.name == "tmp":
            marker = folder / ".project_root"
            if marker.is_file():
                return marker.read_text("utf-8", "replace").strip() or None
            known = names.setdefault(folder.parent, _known_projects(folder.parent.parent))
            return known.get(folder.name) or known.get(project_hash) or _first_directory(meta) or project_hash
    return _first_directory(meta) or project_hash or None


def _known_projects(gemini_home: Path) -> dict[str, str]:
    """Slug and sha256 → project directory, from `projects.json` (newer Gemini CLI versions)."""
    try:
        projects = as_dict(json.loads((gemini_home / "projects.json").read_text("utf-8", "replace")).get("projects"))
    except (OSError, ValueError, AttributeError):
        return {}
    known: dict[str, str] = {}
    for directory, slug in projects.items():
        known[as_str(slug)] = directory
        known[hashlib.sha256(directory.encode("utf-8", "replace")).hexdigest()] = directory
    return known


def _first_directory(meta: dict[str, Any]) -> str:
    directories = as_list(meta.get("directories"))
    return as_str(directories[0]) if directories else ""
