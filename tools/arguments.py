"""Argument errors a model can act on: one plain line naming the parameter, the rule and an example.

The SDK reports a schema violation as pydantic's own text (several lines, the rejected input, a link to
pydantic's docs) and quietly drops arguments the schema does not know. The server runs every call
through `check_arguments` first and rewrites validation errors with `explain`, from the same input
schema the model was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from storage.errors import PastchatsError
from storage.times import utc

EXAMPLES = {
    "query": "'nginx reverse proxy'",
    "uri": "'claude:8f1c…' (as a result shows it)",
    "project": "'homelab'",
    "around": "12",
}
DATE_TIME_EXAMPLE = "2025-05-01T00:00:00Z"


class ArgumentError(PastchatsError):
    """Arguments that do not fit a tool's input schema; the message is what the model reads."""


def _choices(schema: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return list(schema["enum"])
    for option in schema.get("anyOf", []):
        if "enum" in option:
            return list(option["enum"])
    return None


def _kinds(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    options = schema.get("anyOf") or [schema]
    return [option for option in options if option.get("type") != "null"]


def rule(name: str, schema: Mapping[str, Any]) -> str:
    """`max_results must be a whole number from 1 to 10, like 5` from a parameter's JSON schema."""
    choices = _choices(schema)
    if choices:
        return f"{name} must be one of {', '.join(repr(c) for c in choices)}"
    kinds = _kinds(schema)
    if any(kind.get("format") == "date-time" for kind in kinds):
        return f"{name} must be an ISO date-time like {DATE_TIME_EXAMPLE}"
    integer = next((kind for kind in kinds if kind.get("type") == "integer"), None)
    if integer is not None:
        low, high = integer.get("minimum"), integer.get("maximum")
        bounds = f" from {low} to {high}" if low is not None and high is not None else ""
        bounds = bounds or (f" of at least {low}" if low is not None else "")
        example = schema.get("default") if isinstance(schema.get("default"), int) else low if low is not None else 1
        also = " (or a message id)" if any(kind.get("type") == "string" for kind in kinds) else ""
        return f"{name} must be a whole number{bounds}{also}, like {example}"
    example = EXAMPLES.get(name)
    return f"{name} must be text" + (f", like {example}" if example else "")


def check_arguments(tool: str, arguments: Mapping[str, Any], input_schema: Mapping[str, Any]) -> None:
    """Refuse arguments the tool does not have (the SDK would ignore them silently)."""
    known = list(input_schema.get("properties", {}))
    unknown = [name for name in arguments if name not in known]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        raise ArgumentError(
            f"{tool} has no argument {listed}; its arguments are {', '.join(known)}. "
            "Call it again without the unknown one."
        )


def explain(tool: str, error: ValidationError, input_schema: Mapping[str, Any]) -> str:
    """One line per wrong parameter (usually one): the parameter, the rule, an example value."""
    properties = input_schema.get("properties", {})
    lines: list[str] = []
    for detail in error.errors():
        name = str(detail["loc"][0]) if detail["loc"] else ""
        if name not in properties:
            continue
        text = f"{name} is required: " + rule(name, properties[name]) if detail["type"] == "missing" else ""
        text = text or rule(name, properties[name])
        if text not in lines:
            lines.append(text)
    if not lines:
        return f"The arguments do not fit {tool}'s input schema; its arguments are {', '.join(properties)}."
    return "; ".join(lines) + "."


def window(after: datetime | None, before: datetime | None) -> tuple[datetime | None, datetime | None]:
    """The (after, before) pair in UTC, refused when it is empty by construction."""
    after, before = utc(after), utc(before)
    if after is not None and before is not None and after >= before:
        raise ArgumentError("`after` must be earlier than `before`; the window as given contains nothing.")
    return after, before


def blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None
