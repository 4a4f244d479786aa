"""The tools' structured output: the storage result models, plus what the size budget did to them.

The text a tool returns is rendered from exactly these objects, so both always say the same thing.

Their JSON schema (each tool's `outputSchema`) is pydantic's, written out flat: no `$defs`/`$ref`
(each nested model spelled out where it is used) and a nullable field as one `type` list rather than
an `anyOf` with `{"type": "null"}`. It accepts exactly the same documents (a test checks it on real
results and broken ones); it is only cheaper to check: a client that validates every result against
the schema (the Python SDK's does, with jsonschema) does ~0.6x the work, several milliseconds of a
search at 100k messages.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from storage.reads.results import ChatPage, RecentResult, SearchResult

# What may sit beside `type` in the non-null branch of a nullable field for the branch to fold into
# the field itself: all three mean the same on `null` once `null` is among the types and the enum.
_FOLDABLE = frozenset({"type", "format", "enum"})


# An object branch folds too: its keywords constrain objects only, so `null` still passes; its own title
# and description give way to the field's.
_OBJECT = frozenset({"type", "properties", "required", "title", "description"})
_ANNOTATIONS = frozenset({"title", "description"})


def _nullable_folded(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": "string", ...}, {"type": "null"}], ...}` as `{"type": ["string", "null"], ...}`."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if other.get("type") == "object" and set(other) <= _OBJECT and not (set(other) - _ANNOTATIONS) & set(schema):
        folded = {key: value for key, value in schema.items() if key != "anyOf"}
        folded.update({key: value for key, value in other.items() if key not in folded})
        folded["type"] = ["object", "null"]
        return folded
    if not isinstance(other.get("type"), str) or not set(other) <= _FOLDABLE or set(other) & set(schema):
        return schema
    folded = {key: value for key, value in schema.items() if key != "anyOf"}
    folded.update(other, type=[other["type"], "null"])
    if "enum" in other:
        folded["enum"] = [*other["enum"], None]
    return folded


def flat(node: Any, resolve: GetJsonSchemaHandler) -> Any:
    """A JSON schema with every `$ref` replaced by what it points to, and nullable fields folded."""
    if isinstance(node, list):
        return [flat(item, resolve) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = flat(resolve.resolve_ref_schema({"$ref": node["$ref"]}), resolve)
        return {**target, **{key: flat(value, resolve) for key, value in node.items() if key != "$ref"}}
    return _nullable_folded({key: flat(value, resolve) for key, value in node.items()})


class _FlatSchema:
    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # pydantic drops the definitions no `$ref` points to any more, so no `$defs` is left
        return flat(handler.resolve_ref_schema(handler(core_schema)), handler)  # type: ignore[no-any-return]


def _truncated() -> Any:
    return Field(
        default=False,
        description="True when the result was cut to fit the size budget; notes say how to get the rest.",
    )


def _today() -> Any:
    return Field(description="Today's date (UTC): what 'yesterday' or 'last week' count back from.")


def _newest() -> Any:
    return Field(
        default=None,
        description="When the newest chat (in the project asked for) was last updated; set when nothing strong "
        "or nothing at all was found.",
    )


class SearchOutput(_FlatSchema, SearchResult):
    truncated: bool = _truncated()
    today: date = _today()
    newest_chat_at: datetime | None = _newest()


class RecentOutput(_FlatSchema, RecentResult):
    truncated: bool = _truncated()
    today: date = _today()
    newest_chat_at: datetime | None = _newest()


class ReadOutput(_FlatSchema, ChatPage):
    truncated: bool = _truncated()
    notes: list[str] = Field(default_factory=list)
