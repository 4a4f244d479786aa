"""`pastchats export --format markdown`, the grammar in `pastchats search`, and `pastchats read` with a
shortened uri: the CLI's faces of what the tools do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from importers import registry
from importers.base import ImportReport
from server.cli import cli
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from storage.reads.export import markdown, yaml_string
from tests.tools.helpers import chat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"

pytestmark = pytest.mark.usefixtures("hash_embedder")

TRICKY_TITLE = 'Deploy: "prod" at 09:00\n---\n# not a heading \u2028 done'


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("store")
    library = Library.open(store, embedder=HashEmbedder())
    for name, path in [("claude-code", FIXTURES / "claude-code"), ("codex", FIXTURES / "codex")]:
        library.import_conversations(registry.get(name).read(path, ImportReport(str(path))))
    tricky = chat(
        "notes:tricky",
        ["which ```fence``` survives?", "[tool Bash: ls -la]", "plain answer with connection refused in it"],
        title=TRICKY_TITLE,
        project="ops: prod",
    )
    library.import_conversations([tricky])
    library.close()
    return store


def stored(home: Path) -> list[dict[str, object]]:
    result = run(home, "export")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def front_matter(text: str) -> dict[str, object]:
    head = text.split("\n---\n", 1)[0].removeprefix("---\n")
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


def test_markdown_into_a_folder_is_a_file_a_chat_holding_every_messages_text(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "notes"
    result = run(home, "export", "--format", "markdown", "--out", f"{out}/")
    assert result.exit_code == 0, result.output
    chats = stored(home)
    files = sorted(out.glob("*.md"))
    assert len(files) == len(chats)
    by_uri = {front_matter(f.read_text(encoding="utf-8"))["uri"]: f.read_text(encoding="utf-8") for f in files}
    for record in chats:
        text = by_uri[record["id"]]
        for message in record["messages"]:  # type: ignore[attr-defined]
            assert message["text"] in text
        matter = front_matter(text)
        assert matter["title"] == record["title"]
        assert matter["source"] == record["source"]
        assert matter["project"] == record["project"]
        assert matter["created"] == record["created_at"]
        assert matter["updated"] == record["updated_at"]
    assert all(f.stat().st_mode & 0o077 == 0 for f in files)


def test_front_matter_keeps_a_title_with_a_colon_quotes_and_line_breaks_one_value(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.md"
    result = run(home, "export", "--format", "markdown", "--out", str(out), "--source", "pastchats")
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert front_matter(text) == {
        "title": TRICKY_TITLE,
        "source": "pastchats",
        "project": "ops: prod",
        "created": front_matter(text)["created"],
        "updated": front_matter(text)["updated"],
        "uri": "notes:tricky",
        "messages": 3,
    }
    assert yaml.safe_load(yaml_string("a\x85b\ufeffc\ud800")) == "a\x85b\ufeffc\ufffd"


def test_tool_calls_and_output_are_collapsed_and_fenced(home: Path) -> None:
    library = Library.open(home, embedder=None)
    try:
        codex = library.get("codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
        tricky = library.get("notes:tricky")
    finally:
        library.close()
    text = markdown(codex)
    assert text.count("<details><summary>") == 2  # the shell call, and its output
    assert re.search(r"<details><summary>tool calls</summary>\n\n```text\n\[tool shell: ", text)
    assert "## 1. user · 2025-03-14T09:00:01.500000Z" in text
    tricky_text = markdown(tricky)
    assert "which ```fence``` survives?" in tricky_text  # said as written, not in a block
    assert "````text\n[tool Bash: ls -la]\n````" not in tricky_text  # a fence longer only when needed
    assert "```text\n[tool Bash: ls -la]\n```" in tricky_text


def test_markdown_to_standard_output(home: Path) -> None:
    result = run(home, "export", "--format", "markdown", "--source", "codex")
    assert result.exit_code == 0, result.output
    assert result.stdout.count('\nsource: "codex"\n') == 2
    assert "Exported 2 chat(s) to standard output." in result.stderr


def test_the_plain_export_still_reads_back(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "chats.jsonl"
    assert run(home, "export", "--out", str(out)).exit_code == 0
    again = tmp_path / "again"
    assert run(again, "import", str(out)).exit_code == 0
    assert stored(again) == stored(home)


def test_search_reads_the_grammar(home: Path) -> None:
    result = run(home, "search", '"connection refused"', "--json")
    assert result.exit_code == 0, result.output
    assert [hit["uri"] for hit in json.loads(result.stdout)["chats"]] == ["notes:tricky"]
    result = run(home, "search", "connection refused -fence", "--json")
    assert "notes:tricky" not in [hit["uri"] for hit in json.loads(result.stdout)["chats"]]
    result = run(home, "search", "--", "-fence")
    assert result.exit_code == 1
    assert "only says what to leave out" in result.stderr
    assert "pastchats search 'deploy -docker'" in result.stderr


def test_read_takes_a_shortened_uri(home: Path) -> None:
    result = run(home, "read", "codex:0195", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chat"]["uri"] == "codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    # a session's subagents' chats extend its uri: they do not make a start of it ambiguous
    result = run(home, "read", "claude-code:5e55", "--json")
    assert json.loads(result.stdout)["chat"]["uri"] == "claude-code:5e55e000-1111-4000-8000-000000000001"
    result = run(home, "read", "claude-code:")
    assert result.exit_code == 1
    assert re.search(r"pastchats read claude-code:\S+", result.stderr)
