"""The stdio front's part in `tools/call`: which calls it may run before the MCP SDK is up, and the
bytes the SDK would write for their results.

A call is the front's only when its arguments take no judgment the SDK would make differently: every
name one of the tool's, every value of exactly the JSON type and within the bounds of the input
schema the SDK publishes (`tools/list`, stored in `server.stdio_front_replies`), and no string that
the SDK's argument pre-parsing would turn into another value. Anything else is left to the SDK, which
then answers it (with its own error for bad arguments). A call the front takes runs the tool's own
body (`tools.topic_search`, `tools.recent_listing`, `tools.read_page`, the functions the SDK's handlers
run) on the library the server then uses, and its reply is built from the shape the SDK gives a
`tools/call` result for that protocol version, with the text and structured content serialised by
pydantic-core, the serialiser the SDK writes them with. An expected failure (`PastchatsError`) is a
tool error of the words `tools.errors` gives it; anything else is left to the SDK.

The standard library only at import: the tools layer is imported when a call first needs it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from server import stdio_front_replies as replies

if TYPE_CHECKING:
    from storage.library import Library

# The tool bodies the SDK's handlers run (`tools.conversation_search` & co.), by tool name.
BODIES = {
    "conversation_search": ("tools.topic_search", "search"),
    "recent_chats": ("tools.recent_listing", "recent"),
    "read_chat": ("tools.read_page", "read"),
}
LARGEST_INTEGER = 1 << 53
REFUSED = object()  # a value the front leaves to the SDK

_schemas: dict[str, dict[str, Any]] = {}


def input_schemas(version: str) -> dict[str, Any]:
    """The input schema of each tool, as the SDK lists it for this protocol version."""
    if version not in _schemas:
        listed = json.loads(replies.TOOLS_LIST[version])
        _schemas[version] = {tool["name"]: tool["inputSchema"] for tool in listed["tools"]}
    return _schemas[version]


def _kinds(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    options: list[Mapping[str, Any]] = schema.get("anyOf") or [schema]
    return options


def _pre_parsed(text: str) -> bool:
    """Whether the SDK would read this string as JSON and pass on what it holds (`null`, `true`, a list,
    an object) for a parameter not typed plain `str`."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return not isinstance(value, str | int | float)


def _date_time(text: str) -> object:
    from datetime import datetime

    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(datetime).validate_python(text)  # as the SDK's argument model reads it
    except ValidationError:
        return REFUSED


def _string(text: str, kinds: list[Mapping[str, Any]], plain: bool) -> object:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: parsers differ on those
        return REFUSED
    if not plain and _pre_parsed(text):
        return REFUSED
    for kind in kinds:
        if kind.get("type") != "string":
            continue
        if "enum" in kind:
            return text if text in kind["enum"] else REFUSED
        if kind.get("format") == "date-time":
            return _date_time(text)
        if set(kind) <= {"type", "description", "title", "default"}:
            return text
    return REFUSED


def checked_value(value: object, schema: Mapping[str, Any]) -> object:
    """The value the tool body receives for this JSON value, or REFUSED when the front cannot be
    sure the SDK would pass the same (or would accept it at all)."""
    kinds = _kinds(schema)
    types = [kind.get("type") for kind in kinds]
    if value is None:
        return None if "null" in types else REFUSED
    if isinstance(value, bool) or not isinstance(value, int | str):
        return REFUSED  # bools, floats, lists and objects: the SDK's coercions are its own
    if isinstance(value, int):
        integer = next((kind for kind in kinds if kind.get("type") == "integer"), None)
        if integer is None or not -LARGEST_INTEGER < value < LARGEST_INTEGER:
            return REFUSED
        low, high = integer.get("minimum"), integer.get("maximum")
        if set(integer) - {"type", "minimum", "maximum", "description", "title", "default"}:
            return REFUSED
        if (low is not None and value < low) or (high is not None and value > high):
            return REFUSED
        return value
    return _string(value, kinds, plain="anyOf" not in schema and set(schema) <= {"type", "description", "title"})


def checked_call(version: str, params: object) -> tuple[str, dict[str, object]] | None:
    """The tool and every argument of its body (given or defaulted) when the front can run this call
    as the SDK's handler would; None to leave it to the SDK."""
    if not isinstance(params, dict) or not {"name"} <= params.keys() <= {"name", "arguments"}:
        return None
    name, arguments = params["name"], params.get("arguments", {})
    schema = input_schemas(version).get(name) if isinstance(name, str) else None
    if schema is None or name not in BODIES or not isinstance(arguments, dict):
        return None
    properties: dict[str, Any] = schema.get("properties", {})
    if not arguments.keys() <= properties.keys() or not set(schema.get("required", ())) <= arguments.keys():
        return None
    values: dict[str, object] = {}
    for parameter, rules in properties.items():
        if parameter in arguments:
            value = checked_value(arguments[parameter], rules)
        elif "default" in rules:
            value = rules["default"]
        else:
            return None
        if value is REFUSED:
            return None
        values[parameter] = value
    return name, values


def call_reply(
    version: str, request_id: str, tool: str, values: dict[str, object], library: Library, budget: int
) -> str | None:
    """The SDK's reply to this call (one JSON-RPC line), or None when the front leaves it to the SDK."""
    import importlib

    from pydantic_core import PydanticSerializationError, to_json

    from storage.errors import PastchatsError
    from tools.errors import tool_error_text

    module, function = BODIES[tool]
    body = getattr(importlib.import_module(module), function)
    shapes = replies.CALL_SHAPES[version]
    try:
        output, text = body(library, **values, budget=budget)
        parts = [to_json(text).decode(), to_json(output.model_dump(mode="json")).decode()]
        pieces = shapes["success"]
    except PastchatsError as exc:
        parts, pieces = [to_json(tool_error_text(exc)).decode()], shapes["error"]
    except (PydanticSerializationError, UnicodeError):
        return None  # text the serialiser refuses: the SDK's own failure, whatever it is, is the answer
    result = pieces[0] + "".join(part + piece for part, piece in zip(parts, pieces[1:], strict=True))
    return f'{{"jsonrpc":"2.0","id":{request_id},"result":{result}}}\n'
