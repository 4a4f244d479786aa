"""The `pastchats` command: its output is the tools' output, and its errors are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from server.cli import cli
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.tools.helpers import server_for, text_of

CHATS = {
    "conversations": [
        {
            "id": "c-1",
            "title": "Nginx setup",
            "project": "homelab",
            "updated_at": "2025-01-20T11:00:00Z",
            "messages": [
                {"role": "user", "text": "How do I put nginx in front of Jellyfin?"},
                {"role": "assistant", "text": "Use proxy_pass to port 8096."},
            ],
        },
        {"id": "c-2", "updated_at": "2025-01-19T11:00:00Z", "messages": [{"role": "user", "text": "sourdough"}]},
        {"id": "", "messages": []},
    ]
}


pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    source = tmp_path / "chats.json"
    source.write_text(json.dumps(CHATS), encoding="utf-8")
    result = run(tmp_path / "store", "import", str(source))
    assert result.exit_code == 0, result.output
    return tmp_path / "store"


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


def assert_one_line_error(result: Result, *fragments: str) -> None:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    for fragment in fragments:
        assert fragment in lines[0]


def test_import_summarises_new_updated_unchanged_and_skipped_with_reasons(tmp_path: Path) -> None:
    source = tmp_path / "chats.json"
    source.write_text(json.dumps(CHATS), encoding="utf-8")
    first = run(tmp_path / "store", "import", str(source))
    again = run(tmp_path / "store", "import", str(source), "--json")
    assert first.exit_code == 0, first.output
    assert "chats.json (plain): 2 new, 0 updated, 0 unchanged, 1 skipped · 3 messages" in first.stdout
    assert "skipped chats.json, conversation #3" in first.stdout
    report = json.loads(again.stdout)
    assert report["total"] == {"new": 0, "updated": 0, "unchanged": 2, "skipped": 1, "messages": 0}
    assert report["sources"][0]["format"] == "plain"


def test_import_sample_imports_the_bundled_chats(tmp_path: Path) -> None:
    result = run(tmp_path, "import", "--sample", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"]["new"] >= 1


def test_import_without_a_source_is_a_usage_error(tmp_path: Path) -> None:
    result = run(tmp_path, "import")
    assert result.exit_code == 2
    assert "--sample" in result.stderr


def test_an_unreadable_source_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    missing = run(tmp_path, "import", str(tmp_path / "nope.json"))
    assert_one_line_error(missing, "does not exist")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json at all", encoding="utf-8")
    assert_one_line_error(run(tmp_path, "import", str(garbage), "--format", "plain"), "garbage.json")


async def tool_output(home: Path, tool: str, arguments: dict[str, object]) -> tuple[str, object]:
    library = Library.open(home, embedder=HashEmbedder())
    async with Client(server_for(library)) as client:
        result = await client.call_tool(tool, arguments)
    return text_of(result), result.structured_content


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "tool", "arguments"),
    [
        (["search", "jellyfin", "--max-results", "2"], "conversation_search", {"query": "jellyfin", "max_results": 2}),
        (["search", "nginx", "--project", "homelab"], "conversation_search", {"query": "nginx", "project": "homelab"}),
        (["recent", "-n", "1", "--before", "2025-01-20"], "recent_chats", {"n": 1, "before": "2025-01-20T00:00:00Z"}),
        (["recent", "--sort-order", "asc"], "recent_chats", {"sort_order": "asc"}),
        (["read", "c-1", "--offset", "1"], "read_chat", {"uri": "c-1", "offset": 1}),
    ],
)
async def test_query_commands_print_exactly_what_the_tool_returns(
    home: Path, args: list[str], tool: str, arguments: dict[str, object]
) -> None:
    """The same text, except that a next step is the command a person runs, not the model's call."""
    text, structured = await tool_output(home, tool, arguments)
    printed = run(home, *args)
    as_json = run(home, *args, "--json")
    assert printed.exit_code == 0, printed.output
    steps = {
        "read_chat(uri='c-1', offset=0, limit=1)": "pastchats read c-1 --offset 0 --limit 1",
        "read_chat(uri='c-2', around=1)": "pastchats read c-2 --around 1",
    }
    as_structured = json.dumps(structured)
    for model, person in steps.items():
        text = text.replace(model, person)
        as_structured = as_structured.replace(model, person)
    assert printed.stdout == text + "\n"
    assert json.loads(as_json.stdout) == json.loads(as_structured)


def test_query_errors_are_one_line(home: Path, tmp_path: Path) -> None:
    assert_one_line_error(run(home, "read", "nope"), "no chat with uri 'nope'")
    assert_one_line_error(run(home, "search", "  "), "query is empty")
    assert_one_line_error(run(tmp_path / "empty", "search", "nginx"), "pastchats import")
    bad_date = run(home, "recent", "--before", "the day after the party")
    assert bad_date.exit_code == 2
    assert "is not a date: give one as a date (2025-01-20)" in bad_date.stderr


def test_stats_describe_the_store(home: Path) -> None:
    info = json.loads(run(home, "stats", "--json").stdout)
    assert (info["conversations"], info["messages"]) == (2, 3)
    assert info["projects"] == {"homelab": 1}
    assert "Chats: 2 · messages 3" in run(home, "stats").stdout


def test_serving_http_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "serve", "--transport", "streamable-http", "--host", "0.0.0.0")
    assert_one_line_error(result, "PASTCHATS_HTTP_TOKEN", "0.0.0.0")


def test_an_invalid_setting_in_the_environment_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASTCHATS_OUTPUT_BUDGET_CHARS", "lots")
    assert_one_line_error(run(tmp_path, "stats"), "invalid setting", "output_budget_chars")


def test_reindex_reads_the_archive_back_and_says_what_it_did(home: Path) -> None:
    result = run(home, "reindex")

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "Archive: 0 files read, 0 failed"
    report = json.loads(run(home, "reindex", "--json").output)
    assert (report["files_read"], report["conversations_new"], report["not_run"]) == (0, 0, None)


def test_a_sync_in_which_a_file_failed_exits_non_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "user").mkdir()
    monkeypatch.setenv("PASTCHATS_USER_HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PASTCHATS_AGENT_ENV", "{}")
    result = run(tmp_path / "store", "sync", "--path", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert "nowhere" in result.output
    assert "Traceback" not in result.output
    as_json = run(tmp_path / "store", "sync", "--path", str(tmp_path / "nowhere"), "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["files_failed"][0]["reason"] == "does not exist"
