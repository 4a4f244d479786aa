"""A front for the stdio transport that answers `initialize` before the MCP SDK is imported.

Importing the SDK (its protocol types are pydantic models built at import) is most of the time from
spawn to `initialize`: 1.3 s of a quiet 1.4 s here. The front needs only the standard library: it
reads the client's first line on a thread, and when that is an `initialize` request of a shape the
SDK accepts, writes at once the reply the SDK would write (`server.stdio_front_replies`, generated
from the live SDK and checked against it by a test). Meanwhile the SDK and the server start as
before; the SDK's stdin replays that first line, then reads the client's own stdin, so its session
sees exactly what the client sent, in order (anything sent before the SDK is up waits in the pipe),
and the SDK's reply to the replayed `initialize` is the one message kept off the wire. From then on
the SDK answers everything.

The front steps aside (the SDK answers everything, as without it) when the installed `mcp`,
`mcp-types` or pastchats differ from those the replies were generated with, or when the first line
is anything else: another method, a malformed line, a shape this module does not check.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading

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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class StdioFront:
    """Owns the client's stdin and stdout from spawn; hands both to the SDK once it is up."""

    def __init__(self) -> None:
        # Private duplicates, so that diverting fds 0 and 1 (as the SDK does while serving) cannot
        # redirect a read or the early reply in flight.
        self.stdin_fd = os.dup(0)
        self.stdout_fd = os.dup(1)
        os.set_inheritable(self.stdin_fd, False)
        os.set_inheritable(self.stdout_fd, False)
        self.early: str | None = None  # the reply written for the SDK, once written
        self._read = b""  # what the reader took from stdin: the first line and whatever followed it
        self._first_line = threading.Event()
        self._restore: list[tuple[int, int]] = []
        threading.Thread(target=self._answer_first_line, name="pastchats-stdio-front", daemon=True).start()

    def _answer_first_line(self) -> None:
        read = b""
        try:
            while b"\n" not in read and len(read) < LONGEST_FIRST_LINE:
                chunk = os.read(self.stdin_fd, 65536)
                if not chunk:
                    break  # EOF: the SDK reads it too, and ends as it would have
                read += chunk
            end = read.find(b"\n") + 1
            reply = early_reply(read[:end]) if end else None
            if reply is not None:
                _write_all(self.stdout_fd, reply.encode())
                self.early = reply
        finally:
            self._read = read
            self._first_line.set()

    def wait_for_first_line(self) -> bytes:
        """Everything read from stdin so far, once the first line has been read and answered."""
        self._first_line.wait()
        return self._read

    def divert_standard_streams(self) -> None:
        """While the SDK serves, fd 0 reads the null device and fd 1 writes to stderr, as the SDK's own
        stdio transport arranges it: stray output from a handler or a child must not reach the wire."""
        for fd, target in ((0, os.open(os.devnull, os.O_RDONLY)), (1, os.dup(2))):
            self._restore.append((fd, os.dup(fd)))
            os.dup2(target, fd)
            os.close(target)

    def restore_standard_streams(self) -> None:
        while self._restore:
            fd, saved = self._restore.pop()
            os.dup2(saved, fd)
            os.close(saved)

    def sdk_stdin(self) -> io.TextIOWrapper:
        """The client's stdin for the SDK, from its first line (replayed) on; decoded as the SDK's own
        stdio transport decodes it."""
        return io.TextIOWrapper(io.BufferedReader(_Replayed(self)), encoding="utf-8", errors="replace")

    def sdk_stdout(self) -> _Wire:
        return _Wire(self)


class _Replayed(io.RawIOBase):
    """Raw reads: what the front read first, then the client's stdin itself."""

    def __init__(self, front: StdioFront):
        self._front = front
        self._pending: bytes | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._pending is None:
            self._pending = self._front.wait_for_first_line()
        if not self._pending:
            data = os.read(self._front.stdin_fd, len(buffer))
        else:
            data, self._pending = self._pending[: len(buffer)], self._pending[len(buffer) :]
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        # The descriptor stays open: a worker thread may still be blocked reading it when the SDK's
        # transport exits, and a closed number could be reused under it.
        super().close()


class _Wire(io.TextIOBase):
    """The SDK's stdout: the client's, less the SDK's reply to the `initialize` the front answered."""

    def __init__(self, front: StdioFront):
        self._front = front
        self._lock = threading.Lock()
        self._replay_answered = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            if self._is_reply_to_replayed_initialize(text):
                return len(text)
            _write_all(self._front.stdout_fd, text.encode())
        return len(text)

    def _is_reply_to_replayed_initialize(self, text: str) -> bool:
        early = self._front.early
        if early is None or self._replay_answered:
            return False
        try:
            message = json.loads(text)
            sent = json.loads(early)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("id") != sent["id"] or "method" in message:
            return False
        self._replay_answered = True
        import logging  # by now the server has configured it

        log = logging.getLogger("pastchats.server")
        if text == early:
            log.debug("initialize was answered before the MCP SDK was up, with the reply the SDK then gave")
        else:
            # Only a stale generated file can cause this (a test compares it with the live SDK).
            log.warning(
                "the early initialize reply differed from the MCP SDK's; regenerate it: "
                "`python -m server.stdio_front_gen` (sent %s; the SDK's %s)",
                early.strip(),
                text.strip(),
            )
        return True


def start() -> StdioFront | None:
    """The front, answering from now on; None when its stored replies are not for this install, or
    when stdin or stdout is not open (the SDK's transport then copes as it does without the front)."""
    if not replies_are_current():
        return None
    try:
        return StdioFront()
    except OSError:
        return None
