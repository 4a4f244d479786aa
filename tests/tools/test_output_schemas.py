"""Each tool's `outputSchema` is pydantic's written out flat (cheaper for a client to check every result
against), and must mean exactly what pydantic's says: on real results and on every one-step breakage of
them, both schemas accept and refuse the same documents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for
from mcp import Client
from pydantic import BaseModel, create_model
from referencing import Registry

from tests.tools.helpers import BASE, chat, library_with, server_for
from tools.outputs import ReadOutput, RecentOutput, SearchOutput

pytestmark = pytest.mark.anyio

OUTPUTS: dict[str, type[BaseModel]] = {
    "conversation_search": SearchOutput,
    "recent_chats": RecentOutput,
    "read_chat": ReadOutput,
}


def pydantic_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The schema pydantic writes for `model` (with `$defs` and `anyOf`), from a copy without our hook."""
    base = next(b for b in model.__mro__[1:] if issubclass(b, BaseModel) and b.__module__ == "storage.reads.results")
    own = [name for name in model.model_fields if name not in base.model_fields]
    extra = {name: (model.model_fields[name].annotation, model.model_fields[name]) for name in own}
    plain: type[BaseModel] = create_model(model.__name__, __base__=base, **extra)  # type: ignore[call-overload]
    return plain.model_json_schema()


BREAKAGES: list[Any] = [None, "strong", "not a date", 7, 2.5, True, [], {}]


def breakages(document: Any) -> Iterator[Any]:
    """Copies of `document` with one value replaced, one key dropped, or one item added."""

    def walk(node: Any, path: list[Any]) -> Iterator[list[Any]]:
        yield path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from walk(child, [*path, key])

    def at(root: Any, path: list[Any]) -> Any:
        for key in path:
            root = root[key]
        return root

    text = json.dumps(document)

    def fresh() -> Any:  # a deep copy, several times faster than copy.deepcopy
        return json.loads(text)

    for path in walk(document, []):
        if not path:
            continue
        for value in BREAKAGES:
            broken = fresh()
            at(broken, path[:-1])[path[-1]] = value
            yield broken
        parent = at(document, path[:-1])
        if isinstance(parent, dict):
            broken = fresh()
            del at(broken, path[:-1])[path[-1]]
            yield broken
        node = at(document, path)
        if isinstance(node, list):
            for value in BREAKAGES:
                broken = fresh()
                at(broken, path).append(value)
                yield broken


async def real_results(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    library = library_with(
        tmp_path,
        [
            chat("a", ["nginx reverse proxy for the homelab", "use proxy_pass"], project="homelab", url="https://x/a"),
            chat("b", ["postgres vacuum settings", "autovacuum tuning"], updated=BASE + timedelta(days=3)),
        ],
    )
    calls = [
        ("conversation_search", {"query": "nginx proxy"}),
        ("conversation_search", {"query": "zzzz unrelated words"}),
        ("recent_chats", {"n": 2}),
        ("read_chat", {"uri": "a"}),
    ]
    results: dict[str, list[dict[str, Any]]] = {}
    async with Client(server_for(library)) as client:  # the client checks each result against our schema
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error
            assert result.structured_content is not None
            results.setdefault(tool, []).append(result.structured_content)
    return results


async def test_the_output_schemas_have_no_references_and_no_null_alternatives(tmp_path: Path) -> None:
    async with Client(server_for(library_with(tmp_path, []))) as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        text = json.dumps(tool.output_schema)
        for keyword in ("$ref", "$defs", "anyOf"):
            assert keyword not in text, tool.name


async def test_the_flat_output_schemas_accept_and_refuse_what_pydantics_schemas_do(tmp_path: Path) -> None:
    results = await real_results(tmp_path)
    checked = 0
    for tool, documents in results.items():
        ours, theirs = OUTPUTS[tool].model_json_schema(), pydantic_schema(OUTPUTS[tool])
        assert ours != theirs
        flat = validator_for(ours)(ours, registry=Registry())  # as the SDK's client builds it
        plain = validator_for(theirs)(theirs, registry=Registry())
        for document in documents:
            assert flat.is_valid(document)
            assert plain.is_valid(document)
            for broken in breakages(document):
                assert flat.is_valid(broken) == plain.is_valid(broken), (tool, broken)
                checked += 1
    assert checked > 2_000
