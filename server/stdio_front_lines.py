"""Which lines the stdio front answers for the SDK (`server.stdio_front`), and with what.

The first line: an `initialize` request of a shape the SDK accepts, answered with the result the SDK
would give (`server.stdio_front_replies`). After it: `ping` and a cursor-less `tools/list`, answered
from the stored results for the negotiated protocol version, and a `tools/call` the front can run
(`server.stdio_front_calls`). A line is the front's only when every parser would read it alike: one
line end, UTF-8, no member named twice, no NaN, an id the SDK writes back as the front does. Everything
else is left to the SDK. The standard library only.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # not typing's: the front imports as little as it can
if TYPE_CHECKING:
    from typing import Any

# A first line longer than this is left to the SDK (a real `initialize` is well under 2 KB).
LONGEST_FIRST_LINE = 1 << 20
ID_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")
LARGEST_ID = 1 << 53  # integers JSON parsers on either side read exactly


def installed_version(distribution: str) -> str | None:
    """The version of an installed distribution, as `importlib.metadata` finds it (the first
    `NAME-VERSION.dist-info` on sys.path), without importing it (~15 ms)."""
    prefix = distribution + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return name[len(prefix) : -len(".dist-info")]
    return None


def _strings(value: object, required: tuple[str, ...], optional: tuple[str, ...]) -> bool:
    """A JSON object of exactly these string members (the required ones present)."""
    if not isinstance(value, dict) or not set(required) <= value.keys() <= {*required, *optional}:
        return False
    return all(isinstance(item, str) for item in value.values())


def _objects(value: object, allowed: tuple[str, ...] | None) -> bool:
    """A JSON object whose members (only `allowed` ones, or any names) are all objects."""
    if not isinstance(value, dict) or (allowed is not None and not value.keys() <= set(allowed)):
        return False
    return all(isinstance(item, dict) for item in value.values())


def _capabilities(value: object) -> bool:
    """Client capabilities of the shapes the SDK's models accept (each a subset of them)."""
    known = {"roots", "sampling", "elicitation", "experimental", "extensions", "tasks"}
    if not isinstance(value, dict) or not value.keys() <= known:
        return False
    roots = value.get("roots", {})
    if not isinstance(roots, dict) or not roots.keys() <= {"listChanged"}:
        return False
    if not all(isinstance(flag, bool) for flag in roots.values()):
        return False
    return (
        _objects(value.get("sampling", {}), ("context", "tools"))
        and _objects(value.get("elicitation", {}), ("form", "url"))
        and _objects(value.get("tasks", {}), ("list", "cancel"))
        and _objects(value.get("experimental", {}), None)
        and _objects(value.get("extensions", {}), None)
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a member named twice")  # parsers differ on which one wins
    return found


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def request_id_text(value: object) -> str | None:
    """The request id as the SDK writes it back; None for ids left to the SDK."""
    if isinstance(value, int) and not isinstance(value, bool) and -LARGEST_ID < value < LARGEST_ID:
        return str(value)
    if isinstance(value, str) and 0 < len(value) <= 200 and set(value) <= ID_CHARACTERS:
        return f'"{value}"'
    return None


def early_reply(line: bytes) -> str | None:
    """The SDK's reply to this first line (one JSON-RPC message, with its newline), when it is an
    `initialize` request this module can answer for the SDK; None otherwise."""
    from server import stdio_front_replies as replies

    if not line.endswith(b"\n") or b"\r" in line.removesuffix(b"\r\n").removesuffix(b"\n"):
        return None  # the SDK's reader also ends lines at a lone CR
    try:
        message = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except ValueError:  # the SDK answers a malformed line with its own error
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        return None
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        return None
    identifier = request_id_text(message["id"])
    params = message["params"]
    if identifier is None or not isinstance(params, dict):
        return None
    if params.keys() != {"protocolVersion", "capabilities", "clientInfo"}:
        return None
    requested = params["protocolVersion"]
    client = params["clientInfo"]
    if not isinstance(requested, str) or not _strings(client, ("name", "version"), ("title", "description")):
        return None
    if not _capabilities(params["capabilities"]):
        return None
    # The SDK's negotiation: the client's version when it speaks it, else its newest handshake version.
    result = replies.RESULTS.get(requested, replies.RESULTS[replies.LATEST_HANDSHAKE_VERSION])
    return f'{{"jsonrpc":"2.0","id":{identifier},"result":{result}}}\n'


def replies_are_current() -> bool:
    """Whether the installed SDK and pastchats are those the stored replies were generated from."""
    from server import stdio_front_replies as replies

    return all(installed_version(name) == version for name, version in replies.GENERATED_WITH.items())


def parse(line: bytes) -> dict[str, Any] | None:
    """One whole line's JSON-RPC message, when no parser could read it otherwise: UTF-8, one line end
    (the SDK's reader also ends lines at a lone CR), no member named twice, no NaN; else None."""
    if not line.endswith(b"\n") or b"\r" in line[:-1]:
        return None
    try:
        message = json.loads(line.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def negotiated_version(first_line: bytes) -> str:
    """The protocol version the session speaks after the early reply to this `initialize`."""
    from server import stdio_front_replies as replies

    requested = json.loads(first_line)["params"]["protocolVersion"]
    return requested if requested in replies.RESULTS else replies.LATEST_HANDSHAKE_VERSION


def answer(line: bytes, version: str) -> tuple[str, Any] | None:
    """What the front does with a line after `initialize`: ("reply", the line to write) for `ping` and
    `tools/list`, ("call", (request id, tool, arguments)) for a `tools/call` it can run, or None to leave
    the line to the SDK."""
    from server import stdio_front_replies as replies

    message = parse(line)
    if message is None or message.keys() - {"params"} != {"jsonrpc", "id", "method"} or message["jsonrpc"] != "2.0":
        return None
    identifier = request_id_text(message["id"])
    method = message["method"]
    if identifier is None:
        return None
    if method in ("ping", "tools/list"):
        if message.get("params", {}) != {}:
            return None  # a cursor, a _meta: the SDK's
        result = (replies.PING if method == "ping" else replies.TOOLS_LIST)[version]
        return "reply", f'{{"jsonrpc":"2.0","id":{identifier},"result":{result}}}\n'
    if method == "tools/call" and "params" in message:
        from server.stdio_front_calls import checked_call

        checked = checked_call(version, message["params"])
        return None if checked is None else ("call", (identifier, *checked))
    return None
