"""Text that reaches a terminal or a model cannot act on it: no control, escape or bidi character gets
out, whether the chat was imported since (cleaned on the way in) or stored before (cleaned on the way out)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from importers import registry
from server.cli import cli
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.safe_text import clean
from tests.conftest import with_hash_model
from tests.tools.helpers import call, chat, library_with, server_for, text_of

pytestmark = pytest.mark.anyio

# What the issue found reaching a terminal raw: clear screen, title, clipboard (OSC 52), bell,
# backspaces, a right-to-left override, C1 CSI, and a carriage return that rewrites a line.
HOSTILE = (
    "rotate keys \x1b[2J\x1b[H\x1b]0;pwned title\x07 then \x1b]52;c;cm0gLXJmIH4=\x07 copy"
    " bell\x07 back\x08\x08 \u202eevil\u202c \x9b31m red\r\noverwrite\rline \x00 \u2066iso\u2069"
)
KEPT = "emoji 👩\u200d💻 CJK 日本語 Hebrew שלום Arabic مرحبا tab\there"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def assert_safe(text: str) -> None:
    assert UNSAFE.search(text) is None, repr(UNSAFE.findall(text))


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI opens the store with the test embedder the store was made with."""
    monkeypatch.setattr(
        "server.services.opening.open_library",
        lambda settings, **_: Library.open(settings.home, embedder=HashEmbedder()),
    )
    with_hash_model(monkeypatch)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    """A store that already holds unclean text: written as an older pastchats would have written it."""
    stored = chat(
        "old-chat",
        [f"{HOSTILE} {KEPT}", "use ssh-keygen \x1b[1mbold\x1b[0m"],
        title="Keys \x1b]0;title\x07 \u202etxet",
        project="home\x1b[31mlab",
    )
    return library_with(tmp_path_factory.mktemp("store"), [stored])


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("conversation_search", {"query": "rotate keys ssh-keygen"}),
        ("recent_chats", {"n": 3}),
        ("read_chat", {"uri": "old-chat"}),
    ],
)
async def test_stored_control_and_bidi_characters_never_reach_the_model(
    library: Library, tool: str, arguments: dict[str, Any]
) -> None:
    result = await call(server_for(library), tool, arguments)
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "Keys" in text
    for shown in [text, *strings(result.structured_content)]:
        assert_safe(shown)
    if tool != "recent_chats":
        assert "rotate keys" in text
        assert KEPT.replace("\t", " ") in text.replace("\t", " ")
        assert "pwned title" not in text  # the whole escape sequence goes, not just its ESC
        assert "back evil  red" in text


@pytest.mark.parametrize(
    "command",
    [["read", "old-chat"], ["search", "rotate keys"], ["recent"], ["stats"]],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_the_cli_prints_nothing_a_terminal_would_act_on(library: Library, command: list[str], as_json: bool) -> None:
    args = ["--home", str(library.home), *command, *(["--json"] if as_json else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert_safe(result.stdout)
    if as_json:
        for value in strings(json.loads(result.stdout)):
            assert_safe(value)
    if command[0] in ("read", "search"):
        assert "rotate keys" in result.stdout
        assert "日本語" in result.stdout


def test_an_import_stores_text_already_clean_and_keeps_ordinary_unicode(tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    record = {
        "id": "c-1",
        "title": "Keys\x1b]0;t\x07",
        "messages": [{"role": "user", "text": HOSTILE}, {"role": "assistant", "text": KEPT}],
    }
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    library = Library.open(tmp_path / "store", embedder=HashEmbedder())
    conversations, report = registry.read(source)
    library.import_conversations(conversations)
    stored = library.get("c-1")
    assert stored is not None
    assert stored.title == "Keys"
    assert stored.messages[0].text == clean(HOSTILE)
    assert_safe(stored.messages[0].text)
    assert stored.messages[0].text == "rotate keys  then  copy bell back evil  red\noverwrite\nline  iso"
    assert stored.messages[1].text == KEPT
    assert report.skipped == []
    library.close()


def test_clean_removes_sequences_whole_and_keeps_the_rest() -> None:
    assert clean("a\x1b[31mred\x1b[0m b") == "ared b"
    assert clean("\x1b]52;c;SGVsbG8=\x07after") == "after"
    assert clean("\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert clean("crlf\r\nline\rover") == "crlf\nline\nover"
    assert clean("lone \ud800 surrogate") == "lone \ufffd surrogate"
    assert clean("\x1b]0;unterminated\nnext line") == "\nnext line"  # an unclosed string stops at the line
    assert clean(KEPT) is KEPT
