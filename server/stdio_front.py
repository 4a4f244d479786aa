"""A front for the stdio transport: it answers what it can before the MCP SDK is imported.

Importing the SDK (its protocol types are pydantic models built at import) takes 1.1-1.3 s of a quiet
machine, and a search needs the library open too (the model, the store). The front, standard library
only, owns the client's stdin and stdout from spawn. It answers `initialize` at once with the reply
the SDK would write; the library then opens, and only then is the SDK imported (on 2 cores the two
only slow each other down). Until the SDK is up the front keeps reading: `ping` and `tools/list` it
answers from stored replies, a `tools/call` of one of our tools whose arguments it can fully check it
runs on the library, as the SDK's handler would, and writes the reply the SDK would write
(`server.stdio_front_lines` says which lines, `server.stdio_front_calls` how calls run; the replies are
generated from the live SDK by `server.stdio_front_gen` and checked against it by tests). Anything
else waits, in arrival order, for the SDK.

Hand-over: the SDK's stdin replays `initialize` (its reply is kept off the wire), then the lines left
to it, then the live stdin; the lines the front answered are never replayed, and a call the front is
running when the SDK comes up is finished by the front. From then on the SDK answers everything. A
`notifications/cancelled` for a call the front runs is ignored (the SDK never saw the request): the
call is short, read-only and its reply is written anyway.

One thread reads stdin for the whole process and passes the SDK's lines on through an inbox; whole
lines are written to stdout under one lock, the front's and the SDK's alike. The front steps aside
(the SDK answers everything, as without it) when the installed `mcp`, `mcp-types` or pastchats differ
from those the replies were generated with, or when the first line is anything but an `initialize` it
can answer.
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.stdio_front_lines import LONGEST_FIRST_LINE, answer, early_reply, negotiated_version, replies_are_current

if TYPE_CHECKING:
    from storage.library import Library

logger = logging.getLogger("pastchats.server")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Inbox:
    """What the SDK's transport reads: whole lines in order, then at EOF any unterminated last one."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._data = bytearray()
        self._tail = b""
        self._ended = False

    def put(self, lines: bytes) -> None:
        with self._ready:
            self._data += lines
            self._ready.notify_all()

    def end(self, tail: bytes) -> None:
        with self._ready:
            self._tail, self._ended = tail, True
            self._ready.notify_all()

    def take(self, size: int) -> bytes:
        """Up to `size` bytes, waiting for some; b"" once everything up to EOF has been taken."""
        with self._ready:
            while not self._data and not self._ended:
                self._ready.wait()
            if not self._data:
                self._data, self._tail = bytearray(self._tail), b""
            taken = bytes(self._data[:size])
            del self._data[:size]
            return taken


class StdioFront:
    """Owns the client's stdin and stdout from spawn; hands both to the SDK once it is up."""

    def __init__(self) -> None:
        # Private duplicates, so that diverting fds 0 and 1 (as the SDK does while serving) cannot
        # redirect a read or a reply in flight.
        self.stdin_fd = os.dup(0)
        self.stdout_fd = os.dup(1)
        os.set_inheritable(self.stdin_fd, False)
        os.set_inheritable(self.stdout_fd, False)
        self.early: str | None = None  # the reply written for the SDK to `initialize`, once written
        self.version = ""  # the protocol version that reply negotiated
        self.write_lock = threading.Lock()
        self.inbox = _Inbox()
        self._state = threading.Condition()  # guards everything below
        self._handed_over = False
        self._running = 0  # calls the front is running
        self._held: list[tuple[bytes, Any]] = []  # calls read before the library was offered
        self._library: Callable[[], Library | None] | None = None
        self._budget = 0
        self._first_line = threading.Event()
        self._pending = b""  # read from stdin, not yet taken (the reader thread's)
        self._restore: list[tuple[int, int]] = []
        threading.Thread(target=self._read, name="pastchats-stdio-front", daemon=True).start()

    # The reader thread.

    def _read(self) -> None:
        try:
            self._answer_first_line()
        except Exception:  # stdout gone, or a bug of ours: the SDK answers, as it would without the front
            logger.exception("the stdio front could not answer the first line; the MCP SDK answers it")
            with self._state:
                self._handed_over = True
        finally:
            self._first_line.set()
        pending = self._pending
        try:
            while True:
                pending = self._take_lines(pending)
                chunk = os.read(self.stdin_fd, 65536)
                if not chunk:
                    break
                pending += chunk
        finally:
            self.inbox.end(pending)

    def _answer_first_line(self) -> None:
        while b"\n" not in self._pending and len(self._pending) < LONGEST_FIRST_LINE:
            chunk = os.read(self.stdin_fd, 65536)
            if not chunk:
                break  # EOF: the SDK reads it too, and ends as it would have
            self._pending += chunk
        end = self._pending.find(b"\n") + 1
        reply = early_reply(self._pending[:end]) if end else None
        if reply is None:
            with self._state:
                self._handed_over = True  # the front steps aside: everything is the SDK's
            return
        version = negotiated_version(self._pending[:end])
        self.write(reply)
        self.version, self.early = version, reply
        self.inbox.put(self._pending[:end])  # replayed to the SDK, whose reply stays off the wire
        self._pending = self._pending[end:]

    def _take_lines(self, pending: bytes) -> bytes:
        """Take each whole line of `pending`; return what is left (an unterminated line)."""
        while (end := pending.find(b"\n") + 1) > 0:
            with self._state:
                handed_over = self._handed_over
            if handed_over:
                self.inbox.put(pending[: pending.rfind(b"\n") + 1])
                return pending[pending.rfind(b"\n") + 1 :]
            line, pending = pending[:end], pending[end:]
            try:
                action = answer(line, self.version)
                if action is not None and action[0] == "reply":
                    self._reply(action[1])
                elif action is not None:
                    self._start_call(line, action[1])
            except Exception:  # a bug of ours must not lose a line: the SDK answers it
                logger.exception("the stdio front could not take a line; the MCP SDK answers it")
                action = None
            if action is None:
                self.inbox.put(line)
        return pending

    # Calls.

    def _start_call(self, line: bytes, call: Any) -> None:
        with self._state:
            if self._library is None:
                self._held.append((line, call))
                return
            self._running += 1
        threading.Thread(target=self._run_call, args=(line, call), name="pastchats-front-call", daemon=True).start()

    def _run_call(self, line: bytes, call: Any) -> None:
        from server.stdio_front_calls import call_reply

        reply = None
        try:
            assert self._library is not None
            identifier, tool, arguments = call
            library = self._library()
            if library is not None:  # else the SDK answers with the store's error
                reply = call_reply(self.version, identifier, tool, arguments, library, self._budget)
        except Exception:
            logger.exception("the stdio front could not run a tool call; the MCP SDK answers it")
        try:
            if reply is None:
                self.inbox.put(line)
            else:
                self._reply(reply)
                logger.info("%s: answered by the stdio front, before the MCP SDK was up", tool)
        finally:
            with self._state:
                self._running -= 1
                self._state.notify_all()

    def serve_calls(self, library: Callable[[], Library | None], budget: int) -> None:
        """Run tool calls from now on (and those read so far) on the library `library()` returns."""
        with self._state:
            self._library, self._budget = library, budget
            held, self._held = self._held, []
        for line, call in held:
            self._start_call(line, call)

    def wait_for_calls(self, timeout: float | None = None) -> None:
        """Until no call the front took is running (or `timeout` seconds have passed)."""
        with self._state:
            self._state.wait_for(lambda: self._running == 0, timeout)

    def _hand_over(self) -> None:
        with self._state:
            if self._handed_over:
                return
            self._handed_over = True
            held, self._held = self._held, []
        for line, _ in held:  # never offered a library: the SDK answers them
            self.inbox.put(line)

    # The client's stdout, and the SDK's streams.

    def write(self, line: str) -> None:
        """One whole line to the client, never interleaved with another."""
        with self.write_lock:
            _write_all(self.stdout_fd, line.encode())

    def _reply(self, line: str) -> None:
        """A reply of the front's: a client gone (a closed pipe) is the SDK's to notice, as it notices
        it without the front, when it writes or reads EOF."""
        try:
            self.write(line)
        except OSError as exc:
            logger.info("the client did not take a reply of the stdio front: %s", exc)

    def wait_for_first_line(self) -> None:
        """Until the first line has been read and answered (or left to the SDK)."""
        self._first_line.wait()

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
        """The client's stdin for the SDK: `initialize` replayed, the lines the front left to the SDK, then
        everything after; decoded as the SDK's own stdio transport decodes it."""
        return io.TextIOWrapper(io.BufferedReader(_SdkStdin(self)), encoding="utf-8", errors="replace")

    def sdk_stdout(self) -> _Wire:
        return _Wire(self)


class _SdkStdin(io.RawIOBase):
    """Raw reads from the front's inbox; the first one hands the client over to the SDK."""

    def __init__(self, front: StdioFront):
        self._front = front

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._front._hand_over()
        data = self._front.inbox.take(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Wire(io.TextIOBase):
    """The SDK's stdout: the client's, less the SDK's reply to the `initialize` the front answered."""

    def __init__(self, front: StdioFront):
        self._front = front
        self._replay_answered = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not self._is_reply_to_replayed_initialize(text):
            self._front.write(text)
        return len(text)

    def _is_reply_to_replayed_initialize(self, text: str) -> bool:
        import json

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
        if text == early:
            logger.debug("initialize was answered before the MCP SDK was up, with the reply the SDK then gave")
        else:
            # Only a stale generated file can cause this (a test compares it with the live SDK).
            logger.warning(
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
