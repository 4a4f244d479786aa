"""Writes `server/stdio_front_replies.py`, what the stdio front sends for the SDK: `uv run python -m
server.stdio_front_gen` after upgrading `mcp` or changing what the server reports (its name, version,
instructions, capabilities or tools); a test says when it is needed.

Per protocol version: the `initialize` result, the `tools/list` result, the `ping` result, and the
shape of a `tools/call` result around its text and structured content (a probe tool's, with slots).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from server.stdio_front_lines import installed_version

REPLIES = Path(__file__).with_name("stdio_front_replies.py")
DISTRIBUTIONS = ("mcp", "mcp_types", "pastchats_mcp")
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
TEXT_SLOT = "pastchats-front-text-slot"
STRUCTURED_SLOT = {"pastchats-front-structured-slot": 0}


def pastchats_server() -> MCPServer[Any]:
    """The server `pastchats serve` runs (its store is never opened: nothing here needs it)."""
    from server.app import build_server
    from server.settings import Settings

    with tempfile.TemporaryDirectory() as home:
        return build_server(Settings(home=Path(home)))


async def _serve(server: MCPServer[Any], lines: str) -> str:
    written = io.StringIO()
    lowlevel = server._lowlevel_server  # what MCPServer.run("stdio") serves, on our own streams
    stdin, stdout = anyio.wrap_file(io.StringIO(lines)), anyio.wrap_file(written)
    async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
        await serve_dual_era_loop(
            lowlevel,
            read_stream,
            write_stream,
            lifespan_state=None,
            init_options=lowlevel.create_initialization_options(),
        )
    return written.getvalue()


def sdk_output(server: MCPServer[Any], lines: str) -> str:
    """What the SDK's stdio session writes for these input lines (one connection, until EOF)."""
    return anyio.run(_serve, server, lines)


class _HeldClient:
    """In-memory stdin and stdout for the SDK's stdio transport: the lines, then EOF once `replies`
    lines have been written (EOF right away would race the replies still being made)."""

    def __init__(self, lines: str, replies: int):
        self.lines = lines.splitlines(keepends=True)
        self.written: list[str] = []
        self.replies = replies
        self.all_written = anyio.Event()

    async def _lines(self) -> AsyncIterator[str]:
        for line in self.lines:
            yield line
        if len(self.written) < self.replies:
            await self.all_written.wait()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def write(self, text: str) -> None:
        self.written.append(text)
        if len(self.written) >= self.replies:
            self.all_written.set()

    async def flush(self) -> None:
        pass


def sdk_replies(server: MCPServer[Any], lines: str, replies: int) -> list[str]:
    """What the SDK alone writes for these lines, in the order it writes them (EOF held back)."""

    async def serve() -> list[str]:
        client = _HeldClient(lines, replies)
        lowlevel = server._lowlevel_server
        wire = cast("Any", client)  # the transport iterates stdin and writes and flushes stdout
        async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):
            options = lowlevel.create_initialization_options()
            await serve_dual_era_loop(lowlevel, read_stream, write_stream, lifespan_state=None, init_options=options)
        return client.written

    return anyio.run(serve)


def initialize_line(version: str, request_id: int | str = 1) -> str:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "pastchats-gen", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}) + "\n"


def request_line(request_id: int | str, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


def _result_text(reply: str, request_id: int) -> str:
    envelope = f'{{"jsonrpc":"2.0","id":{request_id},"result":'
    if not (reply.startswith(envelope) and reply.endswith("}\n") and reply.count("\n") == 1):
        raise RuntimeError(f"the SDK's reply is not in the envelope the front writes: {reply[:200]!r}")
    return reply[len(envelope) : -2]  # the SDK's own text, byte for byte


def results(server: MCPServer[Any]) -> dict[str, str]:
    """Each handshake protocol version's `initialize` result, as the SDK writes it (JSON text)."""
    versions = HANDSHAKE_PROTOCOL_VERSIONS
    return {version: _result_text(sdk_output(server, initialize_line(version)), 1) for version in versions}


def after_initialize(server: MCPServer[Any], method: str, params: Any = None) -> dict[str, str]:
    """Each version's result for one request sent after `initialize` (JSON text)."""
    found = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        lines = initialize_line(version) + INITIALIZED + request_line(2, method, params)
        found[version] = _result_text(sdk_replies(server, lines, 2)[1], 2)
    return found


def probe_server() -> MCPServer[Any]:
    """A server with the same `call_tool` as ours and one tool whose result is slots, for the shape of
    a `tools/call` result, a success's and an error's."""
    from server.app import PastchatsServer

    probe = PastchatsServer(name="probe")

    @probe.tool(name="probe")
    def probe_tool(fail: bool) -> CallToolResult:
        if fail:
            raise ToolError(TEXT_SLOT)
        return CallToolResult(content=[TextContent(type="text", text=TEXT_SLOT)], structured_content=STRUCTURED_SLOT)

    return probe


def _pieces(result: str, with_structured: bool) -> tuple[str, ...]:
    """The result's text split around its slots: (before the text, after it) or, with structured
    content, (before the text, between, after the structured content)."""
    text_slot = json.dumps(TEXT_SLOT)
    structured_slot = json.dumps(STRUCTURED_SLOT, separators=(",", ":"))
    before, found, rest = result.partition(text_slot)
    if not found or text_slot in rest:
        raise RuntimeError(f"the probe's text is not where the front puts it: {result!r}")
    if not with_structured or structured_slot not in rest:
        return (before, rest)
    between, _, after = rest.partition(structured_slot)
    return (before, between, after)


def call_shapes() -> dict[str, dict[str, tuple[str, ...]]]:
    """Per version, a success's and an error's `tools/call` result split around the slots."""
    probe = probe_server()
    found = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        shapes = {}
        for outcome, fail in (("success", False), ("error", True)):
            params = {"name": "probe", "arguments": {"fail": fail}}
            lines = initialize_line(version) + INITIALIZED + request_line(2, "tools/call", params)
            shapes[outcome] = _pieces(_result_text(sdk_replies(probe, lines, 2)[1], 2), not fail)
        found[version] = shapes
    return found


def _text_lines(text: str, indent: str) -> list[str]:
    return [f"{indent}{json.dumps(text[start : start + 90])}\n" for start in range(0, len(text), 90)] or [
        f'{indent}""\n'
    ]


def _per_version(name: str, texts: dict[str, str]) -> list[str]:
    """`name`: each version's text; a text several versions share (`tools/list` is one for all) is
    written once, under the first of them, and the others refer to it."""
    lines = [f"{name}: dict[str, str] = {{\n"]
    first: dict[str, str] = {}
    for version, text in texts.items():
        if text in first:
            continue
        first[text] = version
        lines.append(f"    {json.dumps(version)}: (\n")
        lines.extend(_text_lines(text, "        "))
        lines.append("    ),\n")
    lines.extend(["}\n", "\n"])
    for version, text in texts.items():
        if first[text] != version:
            lines.append(f"{name}[{json.dumps(version)}] = {name}[{json.dumps(first[text])}]\n")
    return [*lines, "\n"] if len(first) < len(texts) else lines


def write() -> None:
    server = pastchats_server()
    versions = {name: installed_version(name) for name in DISTRIBUTIONS}
    lines = [
        '"""Generated by `python -m server.stdio_front_gen` from the live MCP SDK; do not edit '
        '(a test checks it)."""\n',
        "\n",
        f"GENERATED_WITH: dict[str, str] = {json.dumps(versions)}\n",
        f"LATEST_HANDSHAKE_VERSION = {json.dumps(LATEST_HANDSHAKE_VERSION)}\n",
        "\n",
        *_per_version("RESULTS", results(server)),
        *_per_version("TOOLS_LIST", after_initialize(server, "tools/list")),
        *_per_version("PING", after_initialize(server, "ping")),
        "# A tools/call result's text around its slots: (before the text, between the text and the structured\n",
        "# content, after it) for a success, (before the text, after it) for an error.\n",
        "CALL_SHAPES: dict[str, dict[str, tuple[str, ...]]] = {\n",
    ]
    for version, shapes in call_shapes().items():
        lines.append(f"    {json.dumps(version)}: {{\n")
        for outcome, pieces in shapes.items():
            lines.append(f"        {json.dumps(outcome)}: ({''.join(json.dumps(piece) + ', ' for piece in pieces)}),\n")
        lines.append("    },\n")
    lines.append("}\n")
    REPLIES.write_text("".join(lines), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(REPLIES)], check=True)


if __name__ == "__main__":
    write()
