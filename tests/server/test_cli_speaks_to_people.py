"""`pastchats search | recent | read` show a person what the tools show the model, but every next step
is a command (`pastchats read … --around 3`), never a tool call or "ask the user"; the tools, made by
the same code, keep offering the model its calls (tests/tools checks their text)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from tools.errors import tool_error_text
from tools.voice import call, for_a_person

pytestmark = pytest.mark.usefixtures("hash_embedder")

# What a person must never be told: a tool's call or name as the next step, or to ask themselves.
TO_A_MODEL = re.compile(r"\b(read_chat|recent_chats|conversation_search)\b|ask the user|tell the user", re.IGNORECASE)

LONG = {
    "id": "long",
    "title": "A long chat about caching",
    "updated_at": "2025-01-20T11:00:00Z",
    "messages": [{"role": "user" if i % 2 == 0 else "assistant", "text": f"redis cache note {i}"} for i in range(30)],
}
OTHERS = [
    {
        "id": f"c-{day}",
        "title": f"Chat of day {day}",
        "updated_at": f"2025-01-{day:02d}T10:00:00Z",
        "messages": [{"role": "user", "text": f"sourdough starter day {day}"}],
    }
    for day in range(1, 8)
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    source = tmp_path / "chats.json"
    source.write_text(json.dumps({"conversations": [LONG, *OTHERS]}), encoding="utf-8")
    assert run(tmp_path / "store", "import", str(source)).exit_code == 0
    return tmp_path / "store"


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["recent", "-n", "2"], "Older chats: pastchats recent -n 2 --before 2025-01-07T10:00:00Z."),
        (["read", "long", "--limit", "5"], "Later messages: pastchats read long --offset 5 --limit 5."),
        (["read", "long", "--offset", "99"], "Its last page: pastchats read long --offset 0 --limit 40."),
        (["read", "nope"], "as `pastchats search` or `pastchats recent` gives it"),
        (["search", "zebra quantum"], "`pastchats recent --after DATE`"),
        (["search", "redis cache note", "--max-results", "1"], ""),
    ],
)
def test_every_next_step_the_cli_shows_is_a_command(home: Path, args: list[str], expected: str) -> None:
    result = run(home, *args)
    shown = result.stdout + result.stderr
    assert expected in shown
    assert not TO_A_MODEL.search(shown), shown


def test_an_empty_store_tells_a_person_to_import(tmp_path: Path) -> None:
    result = run(tmp_path / "store", "recent")
    assert result.exit_code == 1
    assert "Import your chat history first: `pastchats import <file>`" in result.stderr
    assert not TO_A_MODEL.search(result.stderr)


def test_a_command_quotes_what_a_shell_would_split_and_keeps_our_markup_out() -> None:
    with for_a_person():
        shown = call("conversation_search", query="nginx </chat> proxy", project="my app", max_results=3)
        assert shown.startswith("pastchats search 'nginx ")
        assert "</chat>" not in shown
        assert shown.endswith("--project 'my app' --max-results 3")
    assert call("read_chat", uri="x", around=3) == "read_chat(uri='x', around=3)"


def test_an_error_names_the_command_for_a_person_and_the_call_for_the_model() -> None:
    from storage.errors import PastTheEnd

    error = PastTheEnd("chat-1", 50, 12, 40)
    assert tool_error_text(error).endswith("Its last page: read_chat(uri='chat-1', offset=0, limit=40).")
    with for_a_person():
        assert tool_error_text(error).endswith("Its last page: pastchats read chat-1 --offset 0 --limit 40.")


def test_a_project_is_shown_by_its_folder_name_where_no_other_project_has_it(tmp_path: Path) -> None:
    """`shop-api` names one project; two `api` folders are told apart by their paths. `read` and the
    structured result keep the full path."""
    source = tmp_path / "chats.jsonl"
    lines = [
        {"id": "a", "project": "/home/ana/src/shop-api", "updated_at": "2025-01-03T10:00:00Z"},
        {"id": "b", "project": "/home/ana/work/api", "updated_at": "2025-01-02T10:00:00Z"},
        {"id": "c", "project": "C:\\Users\\ana\\play\\api", "updated_at": "2025-01-01T10:00:00Z"},
    ]
    text = "\n".join(json.dumps(line | {"messages": [{"role": "user", "text": "checkout rounding"}]}) for line in lines)
    source.write_text(text, encoding="utf-8")
    home = tmp_path / "store"
    assert run(home, "import", str(source)).exit_code == 0

    for shown in (run(home, "recent").stdout, run(home, "search", "checkout rounding").stdout):
        assert "· project shop-api ·" in shown
        assert "· project /home/ana/work/api ·" in shown
        assert "· project C:\\Users\\ana\\play\\api ·" in shown
    assert "· project /home/ana/src/shop-api ·" in run(home, "read", "a").stdout
    structured = json.loads(run(home, "recent", "--json").stdout)
    assert structured["chats"][0]["project"] == "/home/ana/src/shop-api"
