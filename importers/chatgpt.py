"""ChatGPT data exports: the zip, the unzipped folder, `conversations.json`, or the sharded
`conversations-000.json …` of newer exports.

A conversation is a tree (every regenerated answer is a branch); what the user saw is the path from
`current_node` up through `parent`, reversed, and only that path is imported. Hidden messages
(custom instructions, memory, empty system prompts) and reasoning (`thoughts`, `reasoning_recap`)
are skipped on purpose; tool output is shortened to one line.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

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
    shorten,
    summarise_tool_result,
)
from importers._files import Bundle, export_head, file_time
from importers._json import BrokenJson, Malformed, iter_json_values
from importers.base import Importer, ImportReport, SourceError
from storage.models import Conversation, Role

_SHARD = re.compile(r"^conversations(-\d+)?\.json$")
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}
_REASONING_CONTENT = {"thoughts", "reasoning_recap"}
_SILENT_CONTENT = {"user_editable_context", "model_editable_context"}
_REASONING_WORKER = "a8km123"
_MARKER = re.compile("([ \t]*)\ue200([^\ue200\ue201]*)\ue201")  # with the space before it: chips end sentences
_PRIVATE_USE = re.compile("[\ue200-\ue2ff]")


class ChatGPTImporter(Importer):
    name = "chatgpt"

    def detect(self, path: Path) -> bool:
        found = export_head(path, _members)
        if found is None:
            return False
        bundle, head = found
        looks_like_chatgpt = '"mapping"' in head and ('"current_node"' in head or '"create_time"' in head)
        return looks_like_chatgpt or (
            head.strip() in {"", "[]"} and (bundle.has("export_manifest.json") or bundle.has("user.json"))
        )

    def read(self, path: Path, report: ImportReport) -> Iterator[Conversation]:
        report.format = self.name
        bundle = Bundle(path)
        members = _members(bundle)
        if not members:
            raise SourceError(f"{path.name} holds no conversations.json; is it a ChatGPT export?")
        fallback = file_time(path)
        unknown: UnknownCounts = {}
        seen, problems = 0, []
        for member in members:
            try:
                with bundle.open(member) as stream:
                    for number, raw in enumerate(_conversations(stream, report), start=1):
                        seen += 1
                        where = f"{member}, conversation #{number}"
                        source_id = (
                            as_id(raw.get("conversation_id")) or as_id(raw.get("id")) if isinstance(raw, dict) else ""
                        )
                        where += f" ({source_id})" if source_id else ""
                        try:
                            yield _convert(raw, report, unknown, fallback)
                        except Unusable as exc:
                            report.skip(where, str(exc))
                        except RECORD_ERRORS as exc:
                            report.skip(where, f"malformed conversation: {exc}")
            except (BrokenJson, SourceError) as exc:
                problems.append(f"{member}: {exc}")
                report.skip(member, f"{exc}; the conversations before it were imported")
        if seen == 0:
            raise SourceError("; ".join(problems) or f"{path.name} holds no conversations")
        note_unknown(report, unknown)


def _members(bundle: Bundle) -> list[str]:
    """The members holding the conversations (one file, or numbered shards)."""
    shards = [name for name in bundle.names() if _SHARD.match(name)]
    if shards:
        return sorted(shards)
    if bundle.kind == "file" and bundle.path.suffix.lower() == ".json":
        return [bundle.path.name]
    return []


def _conversations(stream: IO[bytes], report: ImportReport) -> Iterator[Any]:
    """The conversations of one file: an export's list, or one conversation object (the per-conversation
    download and browser exporters write the object the web app loads, `mapping` and all)."""
    return iter_json_values(
        stream,
        "conversations",
        lone_object=lambda document: isinstance(document.get("mapping"), dict),
        lone_object_error="a JSON object without a conversation `mapping`; expected an export or one conversation",
        report=report,
    )


def _convert(raw: object, report: ImportReport, unknown: UnknownCounts, fallback: datetime) -> Conversation:
    if isinstance(raw, Malformed):
        raise Unusable(raw.reason)
    if not isinstance(raw, dict):
        raise Unusable(f"expected a conversation object, got {type(raw).__name__}")
    conversation_id = as_id(raw.get("conversation_id")) or as_id(raw.get("id"))
    if not conversation_id:
        raise Unusable("no id")
    mapping = as_dict(raw.get("mapping"))
    turns = []
    for node_id in _visible_path(mapping, as_id(raw.get("current_node")), report):
        turn = _turn(node_id, as_dict(as_dict(mapping[node_id]).get("message")), unknown)
        if turn is not None:
            turns.append(turn)
    return build_conversation(
        id=f"chatgpt:{conversation_id}",
        source="chatgpt",
        turns=turns,
        report=report,
        title=as_str(raw.get("title")),
        created_at=parse_time(raw.get("create_time")),
        updated_at=parse_time(raw.get("update_time")),
        project=_project_of(raw),
        url=f"https://chatgpt.com/c/{conversation_id}",
        fallback_time=fallback,
    )


def _visible_path(mapping: dict[str, Any], current: str, report: ImportReport) -> list[str]:
    """Node ids from the root to `current_node`. Without a usable current node, the newest leaf."""
    if current not in mapping:
        leaves = [key for key, node in mapping.items() if not as_list(as_dict(node).get("children"))]
        if not leaves:
            return []
        report.note("some ChatGPT conversations had no current_node; their newest branch was used")
        current = max(leaves, key=lambda key: _node_time(mapping[key]))
    path: list[str] = []
    node_id, seen = current, set()
    while node_id in mapping and node_id not in seen:
        seen.add(node_id)
        path.append(node_id)
        node_id = as_id(as_dict(mapping[node_id]).get("parent"))
    path.reverse()
    return path


def _node_time(node: object) -> float:
    moment = parse_time(as_dict(as_dict(node).get("message")).get("create_time"))
    return moment.timestamp() if moment else 0.0


def _turn(node_id: str, message: dict[str, Any], unknown: UnknownCounts) -> Turn | None:
    if not message:
        return None
    metadata = as_dict(message.get("metadata"))
    if metadata.get("is_visually_hidden_from_conversation") is True or metadata.get("is_user_system_message"):
        return None
    author = as_dict(message.get("author"))
    if _is_reasoning(message, author, metadata):
        return None
    role = _ROLES.get(as_str(author.get("role")))
    if role is None:
        count_unknown(unknown, as_str(author.get("role")), "messages", "author role")
        return None
    text = _without_markers(_content_text(as_dict(message.get("content")), unknown))
    if role == "tool" and text:
        name = as_str(author.get("name"))
        text = f"[tool {name}] {shorten(text, 300)}" if name else summarise_tool_result(text)
    return Turn(as_id(message.get("id")) or node_id, role, text, parse_time(message.get("create_time")))


def _is_reasoning(message: dict[str, Any], author: dict[str, Any], metadata: dict[str, Any]) -> bool:
    """The model thinking, which the app folds away: reasoning content, the reasoning worker's messages
    (o1/o3/pro: author `tool` named `a8km123`, with the "Reasoning" / "Reasoned for 12s" labels in
    metadata) and gpt-5's `analysis` channel. Not a tool, and not part of the visible thread."""
    if as_str(as_dict(message.get("content")).get("content_type")) in _REASONING_CONTENT:
        return True
    if message.get("channel") == "analysis":
        return True
    labelled = "finished_text" in metadata or "initial_text" in metadata
    return as_str(author.get("role")) == "tool" and (labelled or as_str(author.get("name")) == _REASONING_WORKER)


def _without_markers(text: str) -> str:
    """Text without the app's private-use markup: `\\ue200cite\\ue202turn0search1\\ue201` and its
    kin (filecite, navlist, image_group...) are citations drawn as chips, so they go; an entity marker
    (`\\ue200entity\\ue202["city","Paris"]\\ue201`) is drawn as its name, so the name stays. Stray marker
    characters (U+E200-U+E2FF, such as the highlight brackets) are dropped."""
    if not _PRIVATE_USE.search(text):
        return text
    text = _MARKER.sub(_marker_text, text)
    return _PRIVATE_USE.sub("", text)


def _marker_text(match: re.Match[str]) -> str:
    kind, _, rest = match.group(2).partition("\ue202")
    if kind == "entity":
        with contextlib.suppress(ValueError, RecursionError):
            value = json.loads(rest)
            if isinstance(value, list) and len(value) > 1 and isinstance(value[1], str):
                return match.group(1) + value[1]
    return ""


def _content_text(content: dict[str, Any], unknown: UnknownCounts) -> str:
    kind = as_str(content.get("content_type"))
    if kind in {"text", "multimodal_text"}:
        return "\n".join(_part_text(part) for part in as_list(content.get("parts"))).strip()
    if kind == "code":
        return as_str(content.get("text"))
    if kind == "execution_output":
        return summarise_tool_result(as_str(content.get("text")))
    if kind == "tether_quote":
        title = as_str(content.get("title")) or as_str(content.get("domain"))
        return f"[quote {shorten(title, 80)}] {shorten(as_str(content.get('text')), 300)}"
    if kind == "tether_browsing_display":
        return shorten(as_str(content.get("result")) or as_str(content.get("summary")), 300)
    if kind == "system_error":
        return f"[error: {shorten(as_str(content.get('text')), 200)}]"
    if kind not in _SILENT_CONTENT:
        count_unknown(unknown, kind, "messages", "content type")
    return ""


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    part = as_dict(part)
    kind = as_str(part.get("content_type"))
    if kind == "audio_transcription":
        return as_str(part.get("text"))
    if kind == "image_asset_pointer":
        return "[image]"
    if kind in {"audio_asset_pointer", "real_time_user_audio_video_asset_pointer"}:
        return ""
    return f"[{kind}]" if kind else ""


def _project_of(raw: dict[str, Any]) -> str | None:
    for key in ("project_name", "project_title"):
        if as_str(raw.get(key)).strip():
            return as_str(raw.get(key)).strip()
    gizmo = as_str(raw.get("gizmo_id"))
    # Projects are stored as gizmos of type "snorlax" (ids `g-p-…`); plain custom GPTs are not projects.
    if gizmo and (raw.get("gizmo_type") == "snorlax" or gizmo.startswith("g-p-")):
        return gizmo
    return None
