"""Claude.ai data exports (Settings → Privacy → Export data): the zip, the unzipped folder, or the
`conversations.json` inside it, with project names from `projects.json` when it is there.

Message text comes from the `content` blocks when present, else from `text`. Thinking blocks are
skipped on purpose (the model's scratch work, noisy to search); tool calls and results become one
short line each; attachments' extracted text is indexed with the message, marked `[attachment name]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
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
    result_text,
    summarise_tool_call,
    summarise_tool_result,
)
from importers._files import Bundle, export_head, file_time
from importers._json import BrokenJson, Malformed, iter_json_array
from importers._touches import tool_use_touches
from importers.base import Importer, ImportReport, SourceError
from storage.models import Conversation, Role

CONVERSATIONS = "conversations.json"
_SENDERS: dict[str, Role] = {"human": "user", "user": "user", "assistant": "assistant"}
_SKIPPED_BLOCKS = {"thinking", "redacted_thinking", "token_budget"}


class ClaudeImporter(Importer):
    name = "claude"

    def detect(self, path: Path) -> bool:
        found = export_head(path, lambda bundle: [m] if (m := _member(bundle)) else [])
        if found is None:
            return False
        bundle, head = found
        looks_like_claude = '"mapping"' not in head and (
            '"chat_messages"' in head or ('"account"' in head and '"uuid"' in head)
        )
        # An export with no chats yet is `[]`: tell it apart by the files a Claude export has.
        return looks_like_claude or (
            head.strip() in {"", "[]"} and bundle.has("users.json") and not bundle.has("user.json")
        )

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        bundle = Bundle(path)
        member = _member(bundle)
        if member is None:
            raise SourceError(f"{path.name} holds no {CONVERSATIONS}; is it a Claude.ai export?")
        projects = _project_names(bundle, report)
        fallback = file_time(path)
        unknown: UnknownCounts = {}
        seen = 0
        try:
            with bundle.open(member) as stream:
                for number, raw in enumerate(iter_json_array(stream, report), start=1):
                    seen += 1
                    where = f"{member}, conversation #{number}"
                    if isinstance(raw, dict) and as_id(raw.get("uuid")):
                        where += f" ({as_id(raw.get('uuid'))})"
                    try:
                        yield _convert(raw, projects, report, unknown, fallback)
                    except Unusable as exc:
                        report.skip(where, str(exc))
                    except RECORD_ERRORS as exc:
                        report.skip(where, f"malformed conversation: {exc}")
        except (BrokenJson, SourceError) as exc:
            if seen == 0:
                raise SourceError(f"{member} in {path.name}: {exc}") from None
            report.skip(member, f"{exc}; the conversations before it were imported")
        if seen == 0:
            raise SourceError(f"{path.name} holds no conversations")
        note_unknown(report, unknown)


def _member(bundle: Bundle) -> str | None:
    """The member holding the conversations."""
    if bundle.has(CONVERSATIONS):
        return CONVERSATIONS
    if bundle.kind == "file" and bundle.path.suffix.lower() == ".json":
        return bundle.path.name
    return None


def _project_names(bundle: Bundle, report: ImportReport) -> dict[str, str]:
    if not bundle.has("projects.json"):
        return {}
    try:
        projects = json.loads(bundle.read_text("projects.json"))
    except (ValueError, RecursionError, SourceError):
        report.note("projects.json could not be read; project ids are used instead of names")
        return {}
    names: dict[str, str] = {}
    for project in as_list(projects):
        project = as_dict(project)
        uuid, name = as_id(project.get("uuid")), as_str(project.get("name")).strip()
        if uuid and name:
            names[uuid] = name
    return names


def _convert(
    raw: object, projects: dict[str, str], report: ImportReport, unknown: UnknownCounts, fallback: datetime
) -> Conversation:
    if isinstance(raw, Malformed):
        raise Unusable(raw.reason)
    if not isinstance(raw, dict):
        raise Unusable(f"expected a conversation object, got {type(raw).__name__}")
    uuid = as_id(raw.get("uuid")) or as_id(raw.get("id"))
    if not uuid:
        raise Unusable("no uuid")
    turns: list[Turn] = []
    for message in _visible_thread(raw, report):
        if not isinstance(message, dict):
            count_unknown(unknown, "not an object", "messages", "shape")
            continue
        role = _SENDERS.get(as_str(message.get("sender")).lower())
        if role is None:
            count_unknown(unknown, as_str(message.get("sender")), "messages", "sender")
            continue
        text = _message_text(message, unknown)
        touched = tool_use_touches(message.get("content"))
        turns.append(Turn(as_id(message.get("uuid")), role, text, parse_time(message.get("created_at")), touched))
    return build_conversation(
        id=f"claude:{uuid}",
        source="claude",
        turns=turns,
        report=report,
        title=as_str(raw.get("name")),
        created_at=parse_time(raw.get("created_at")),
        updated_at=parse_time(raw.get("updated_at")),
        project=_project_of(raw, projects),
        url=f"https://claude.ai/chat/{uuid}",
        fallback_time=fallback,
    )


def _visible_thread(raw: dict[str, Any], report: ImportReport) -> list[Any]:
    """The messages the user sees. The official export lists one thread; copies of the web app's own
    data (`?tree=True`, as browser exporters save it) hold every edit and retry, each message naming
    its `parent_message_uuid`: then only the path from `current_leaf_message_uuid` (else the newest
    leaf) back to the root is the conversation, as in the app."""
    messages = as_list(raw.get("chat_messages"))
    by_id = {as_id(m.get("uuid")): m for m in messages if isinstance(m, dict) and as_id(m.get("uuid"))}
    if not any("parent_message_uuid" in m for m in by_id.values()):
        return messages
    leaf = as_id(raw.get("current_leaf_message_uuid"))
    if leaf not in by_id:
        parents = {as_id(m.get("parent_message_uuid")) for m in by_id.values()}
        leaves = [key for key in by_id if key not in parents]
        if not leaves:
            return messages
        if len(leaves) > 1:
            report.note("some Claude conversations named no current message; their newest branch was used")
        leaf = max(leaves, key=lambda key: as_str(by_id[key].get("created_at")))
    thread: list[Any] = []
    seen: set[str] = set()
    while leaf in by_id and leaf not in seen:
        seen.add(leaf)
        thread.append(by_id[leaf])
        leaf = as_id(by_id[leaf].get("parent_message_uuid"))
    thread.reverse()
    return thread


def _project_of(raw: dict[str, Any], projects: dict[str, str]) -> str | None:
    project = raw.get("project")
    uuid = as_id(raw.get("project_uuid")) or as_id(as_dict(project).get("uuid"))
    if uuid:
        return projects.get(uuid) or as_str(as_dict(project).get("name")).strip() or uuid
    if isinstance(project, str) and project.strip():
        return projects.get(project.strip(), project.strip())
    return None


def _message_text(message: dict[str, Any], unknown: UnknownCounts) -> str:
    parts: list[str] = []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            parts.append(as_str(block.get("text")))
        elif kind == "tool_use":
            parts.append(summarise_tool_call(as_str(block.get("name")), block.get("input")))
        elif kind == "tool_result":
            parts.append(summarise_tool_result(result_text(block.get("content")), error=block.get("is_error") is True))
        elif kind not in _SKIPPED_BLOCKS:
            count_unknown(unknown, kind, "content blocks")
    text = "\n\n".join(part for part in parts if part.strip())
    if not text.strip():
        text = as_str(message.get("text"))
    for attachment in as_list(message.get("attachments")):
        attachment = as_dict(attachment)
        name = as_str(attachment.get("file_name")) or "unnamed"
        extracted = as_str(attachment.get("extracted_content"))
        text += f"\n\n[attachment {name}]" + (f"\n{extracted}" if extracted.strip() else "")
    for file in as_list(message.get("files")):
        name = as_str(as_dict(file).get("file_name"))
        if name:
            text += f"\n\n[file {name}]"
    return text.strip()
