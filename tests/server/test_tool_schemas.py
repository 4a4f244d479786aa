"""What models see of the tools is pinned: any change to a schema has to be deliberate.

After an intended change, regenerate the snapshot and review its diff:
    UPDATE_SNAPSHOTS=1 uv run pytest tests/server/test_tool_schemas.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.tools.helpers import library_with, server_for

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools.json"


async def listed_tools(tmp_path: Path) -> list[dict[str, Any]]:
    async with Client(server_for(library_with(tmp_path, []))) as client:
        tools = (await client.list_tools()).tools
    return [
        {
            "name": tool.name,
            "title": tool.title,
            "has_description": bool(tool.description and tool.description.strip()),
            "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if tool.annotations
            else None,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
        }
        for tool in tools
    ]


async def test_tool_schemas_match_the_committed_snapshot(tmp_path: Path) -> None:
    current = await listed_tools(tmp_path)
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert current == json.loads(SNAPSHOT.read_text(encoding="utf-8")), (
        "the tools' schemas changed; if intended, run UPDATE_SNAPSHOTS=1 uv run pytest "
        "tests/server/test_tool_schemas.py and review the diff of tests/server/snapshots/tools.json"
    )


async def test_every_tool_parameter_is_described_for_the_model(tmp_path: Path) -> None:
    for tool in await listed_tools(tmp_path):
        assert tool["has_description"]
        for name, schema in tool["inputSchema"]["properties"].items():
            assert schema.get("description"), f"{tool['name']}.{name} has no description"


async def test_claude_ai_parameter_names_defaults_and_bounds_are_kept(tmp_path: Path) -> None:
    tools = {tool["name"]: tool["inputSchema"] for tool in await listed_tools(tmp_path)}
    search, recent = tools["conversation_search"], tools["recent_chats"]
    assert search["required"] == ["query"]
    bounds = ("default", "minimum", "maximum")
    assert [search["properties"]["max_results"][key] for key in bounds] == [5, 1, 10]
    assert [recent["properties"]["n"][key] for key in bounds] == [3, 1, 20]
    assert recent["properties"]["sort_order"]["enum"] == ["asc", "desc"]
    assert recent["properties"]["sort_order"]["default"] == "desc"
    assert list(recent["properties"]) == ["n", "sort_order", "before", "after", "project"]
