"""Any arguments to any tool give a normal result or a one-line error; the server goes on answering."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from tests.fuzz.strategies import ODD_DATES, ODD_NUMBERS, ODD_TEXT, hostile
from tests.tools.helpers import chat, library_with, server_for, text_of

RUNS = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
URIS = ["ssh-keys", "tmux-config", "vacuum", "odd-text"]
# What must never reach the model: control characters (JSON escapes C0 itself), C1, DEL, bidi controls.
UNSAFE = re.compile("[\x1b\x07\x08\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

offsets = st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12, minutes=-59))])
# Datetimes from year 1 to 9999 with any offset, written as ISO text, so the edges overflow in UTC.
datetimes = st.builds(
    lambda when, tz: when.replace(tzinfo=tz).isoformat(),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    offsets,
)
times = st.one_of(st.none(), datetimes, st.sampled_from(ODD_DATES), st.text(max_size=30), hostile)
queries = st.one_of(
    st.text(max_size=80),
    st.sampled_from(ODD_TEXT),
    st.text(alphabet='+-&|!(){}[]^"~*?:\\/ AND OR NOT', max_size=40),
    st.just("q" * 100_000),
    hostile,
)
ints = st.one_of(st.integers(), st.sampled_from(ODD_NUMBERS), hostile)
projects = st.one_of(st.none(), st.sampled_from(["homelab", "HOMELAB", "nope", ""]), st.text(max_size=20), hostile)
uris = st.one_of(st.sampled_from(URIS), st.text(max_size=40), st.sampled_from(ODD_TEXT), hostile)


def arguments(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Any subset of the fields (a required one may be missing too)."""
    return st.fixed_dictionaries({}, optional=fields)


CALLS = st.one_of(
    st.tuples(
        st.just("conversation_search"),
        arguments(query=queries, max_results=ints, project=projects, after=times, before=times),
    ),
    st.tuples(
        st.just("recent_chats"),
        arguments(
            n=ints,
            sort_order=st.one_of(st.sampled_from(["asc", "desc", "ASC"]), hostile),
            before=times,
            after=times,
            project=projects,
        ),
    ),
    st.tuples(st.just("read_chat"), arguments(uri=uris, offset=ints, limit=ints, around=ints)),
)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, Client]]:
    """One store, one server and one in-memory client for every example (the server must outlive them all)."""
    library = library_with(
        Path(tmp_path_factory.mktemp("fuzz-tools")),
        [
            chat(
                "ssh-keys", ["how do I rotate ssh keys", "use ssh-keygen and update authorized_keys"], project="homelab"
            ),
            chat("tmux-config", ["tmux prefix key", "set -g prefix C-a"] * 30, project="dotfiles"),
            chat("vacuum", ["robot vacuum maps", "it keeps the map in the app"]),
            # stored as an older pastchats stored it (LanceDB never took a lone surrogate): what every
            # answer shows of it must be inert
            chat(
                "odd-text",
                [f"odd {text} text" for text in ODD_TEXT if "\ud800" not in text],
                title="odd \x1b]0;t\x07 \u202etitle",
            ),
        ],
    )
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server_for(library))) as client:
        yield portal, client
    library.close()


def call(session: tuple[BlockingPortal, Client], tool: str, args: dict[str, Any]) -> CallToolResult:
    portal, client = session
    return portal.call(client.call_tool, tool, args)


def assert_plain_error(result: CallToolResult) -> None:
    text = text_of(result)
    assert text.strip(), "an error with no words"
    assert "\n" not in text.strip(), text
    for leak in ("Internal error", "Traceback", "pydantic", "errors.pydantic.dev", "http://", "https://"):
        assert leak not in text, text


@RUNS
@given(call_=CALLS)
def test_any_tool_arguments_give_a_result_or_a_plain_one_line_error(
    session: tuple[BlockingPortal, Client], call_: tuple[str, dict[str, Any]]
) -> None:
    tool, args = call_
    result = call(session, tool, args)
    if result.is_error:
        assert_plain_error(result)
    else:
        assert text_of(result).strip()
    assert UNSAFE.search(text_of(result) + json.dumps(result.structured_content, ensure_ascii=False)) is None
    after = call(session, "recent_chats", {"n": 3})
    assert not after.is_error, text_of(after)
    assert "ssh-keys" in text_of(after)
