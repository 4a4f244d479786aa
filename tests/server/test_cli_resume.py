"""`pastchats resume`: the agent's own command that continues a session, in its folder, for the sessions
the agents wrote (their fixtures), quoted for a shell; and plainly none where the agent has none."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from importers import registry
from importers.base import ImportReport
from importers.gemini import GeminiImporter
from importers.registry import resume_argv
from server.cli import cli
from server.services.resume import resume_command
from storage.embedding.embedder import HashEmbedder
from storage.library import Library
from tests.tools.helpers import chat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"

pytestmark = pytest.mark.usefixtures("hash_embedder")


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("store")
    library = Library.open(store, embedder=HashEmbedder())
    sources = [
        ("claude-code", FIXTURES / "claude-code"),
        ("codex", FIXTURES / "codex"),
        ("gemini", FIXTURES / "gemini"),
        ("gemini", FIXTURES / "gemini-subagents" / ".gemini"),
        ("opencode", FIXTURES / "opencode" / "real-1.18"),
        ("qwen-code", FIXTURES / "qwen-code" / "real-0.15" / "projects"),
    ]
    for name, path in sources:
        library.import_conversations(registry.get(name).read(path, ImportReport(str(path))))
    folder = "/home/ana/my project's $HOME"  # a folder a shell would split and expand unquoted
    library.import_conversations(
        [
            chat("claude-code:7e7e7e7e-0000-4000-8000-000000000001", ["hello"], project=folder).model_copy(
                update={"source": "claude-code"}
            ),
            chat("kilo:ses_abc", ["hi"], project="/home/ana/kilo").model_copy(update={"source": "kilo"}),
            chat("notes-1", ["a plain note"]),
        ]
    )
    library.close()
    return store


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "claude-code:5e55e000-1111-4000-8000-000000000001",
            "cd /home/ana/src/shop && claude --resume 5e55e000-1111-4000-8000-000000000001",
        ),
        # a subagent's chat continues in the session it ran in
        (
            "claude-code:5e55e000-1111-4000-8000-000000000001:agent-a1b2c3",
            "cd /home/ana/src/shop && claude --resume 5e55e000-1111-4000-8000-000000000001",
        ),
        (
            "codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            "cd /home/ana/src/api && codex resume 0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        ),
        # Gemini CLI's `--resume` takes the recording's sessionId, not its file name
        (
            "gemini:9c1d2e3f-0000-4000-8000-00000000abcd",
            "cd /home/ana/src/weather && gemini --resume 9c1d2e3f-0000-4000-8000-00000000abcd",
        ),
        # a subagent's recording continues in the session that started it, the one Gemini CLI lists
        (
            "gemini:7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f",
            "cd /home/ana/src/tiles && gemini --resume 1f2e3d4c-5b6a-4789-8a0b-c1d2e3f4a5b6",
        ),
        (
            "opencode:ses_dde362bd1ffeT9Z2GzCHL505h7",
            "cd /tmp/oc2/home/src/ratelimit && opencode --session ses_dde362bd1ffeT9Z2GzCHL505h7",
        ),
        (
            "qwen-code:7c67c8af-d544-4d32-8085-4c32662f0b74",
            "cd /tmp/qw2/home/src/weather && qwen --resume 7c67c8af-d544-4d32-8085-4c32662f0b74",
        ),
    ],
)
def test_resume_prints_the_agents_own_command_in_the_sessions_folder(home: Path, uri: str, expected: str) -> None:
    result = run(home, "resume", uri)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == expected


def test_a_start_of_the_uri_is_enough(home: Path) -> None:
    result = run(home, "resume", "codex:0195")
    assert result.stdout.strip().endswith("codex resume 0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")


def test_the_folder_and_the_id_are_quoted_for_a_shell(home: Path) -> None:
    result = run(home, "resume", "claude-code:7e7e7e7e-0000-4000-8000-000000000001")
    assert result.exit_code == 0, result.output
    words = shlex.split(result.stdout.strip())
    assert words == ["cd", "/home/ana/my project's $HOME", "&&", "claude", "--resume", words[-1]]
    assert words[-1] == "7e7e7e7e-0000-4000-8000-000000000001"


def test_a_session_without_a_folder_gets_the_command_and_says_where_to_run_it(home: Path) -> None:
    result = run(home, "resume", "gemini:4d5e6f70-0000-4000-8000-000000000001")  # the project is only a hash
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "gemini --resume 4d5e6f70-0000-4000-8000-000000000001"
    assert "recorded no folder" in result.stderr


@pytest.mark.parametrize("uri", ["notes-1", "kilo:ses_abc"])
def test_an_agent_without_a_resume_command_is_said_plainly(home: Path, uri: str) -> None:
    result = run(home, "resume", uri)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "has no command that continues a past session" in result.stderr
    assert f"pastchats read {uri}" in result.stderr


def test_an_ambiguous_start_lists_the_chats_and_the_next_command(home: Path) -> None:
    result = run(home, "resume", "claude-code:")
    assert result.exit_code == 1
    assert re.search(r"pastchats resume claude-code:\S+", result.stderr)
    # a session's subagents' chats extend its uri: they leave a start of it naming the session alone
    result = run(home, "resume", "claude-code:5e55")
    assert result.exit_code == 0, result.stderr
    assert "claude --resume 5e55e000-1111-4000-8000-000000000001" in result.stdout


def test_an_unknown_uri_names_how_to_find_one(home: Path) -> None:
    result = run(home, "resume", "nothing-like-it")
    assert result.exit_code == 1
    assert "no chat with uri 'nothing-like-it'" in result.stderr
    assert "pastchats search" in result.stderr


def test_the_service_gives_the_page_the_parts(home: Path) -> None:
    library = Library.open(home, embedder=None)
    try:
        found = resume_command(library, "codex:0195a1b2")
    finally:
        library.close()
    assert (found.uri, found.source, found.folder) == (
        "codex:0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "codex",
        "/home/ana/src/api",
    )
    assert found.reason is None


def test_a_gemini_recording_without_a_session_id_cannot_be_resumed() -> None:
    # Gemini CLI finds a session by the sessionId inside the recording; one named after its file has none
    assert GeminiImporter().session_id("gemini:session-2025-09-18T14-02-1a2b3c4d") is None
    assert resume_argv("gemini", "gemini:session-2025-09-18T14-02-1a2b3c4d") is None
    assert resume_argv("chatgpt", "chatgpt:abc") is None
