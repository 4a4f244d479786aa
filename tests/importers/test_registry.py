from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from importers import registry
from importers.base import PLATFORMS, SourceError
from tests.agent_fixtures import FIXTURES, session_folders

GEMINI_SESSION = (
    "gemini/tmp/ddd5c1271bba0899aa1da52d83260612eaf190303be48f820f2c891ffbfd9168/chats/"
    "session-2025-04-02T10-00-9c1d2e3f.jsonl"
)


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("claude/export-2025", "claude"),
        ("claude/export-2024/conversations.json", "claude"),
        ("chatgpt/single", "chatgpt"),
        ("chatgpt/single/conversations.json", "chatgpt"),
        ("chatgpt/sharded", "chatgpt"),
        ("claude-code/projects", "claude-code"),
        ("claude-code/projects/-home-ana-src-shop", "claude-code"),
        ("claude-code/projects/-home-ana-src-shop/5e55e000-1111-4000-8000-000000000001.jsonl", "claude-code"),
        ("codex", "codex"),
        ("codex/sessions", "codex"),
        ("codex/archived_sessions/rollout-2025-01-05T14-30-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl", "codex"),
        ("gemini", "gemini"),
        ("gemini/tmp", "gemini"),
        (GEMINI_SESSION, "gemini"),
        (GEMINI_SESSION.rsplit("/", 1)[0], "gemini"),
        (
            "gemini/tmp/0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f/chats/"
            "session-2024-11-20T08-15-4d5e6f70.json",
            "gemini",
        ),
        ("aider", "aider"),
        ("aider/.aider.chat.history.md", "aider"),
        ("pi/sessions", "pi"),
        ("kimi-cli/.kimi", "kimi-cli"),
        ("kimi-cli/.kimi/sessions", "kimi-cli"),
        ("openhands/.openhands", "openhands"),
        ("openhands-v0/.openhands", "openhands-v0"),
        ("kimi-code/.kimi-code", "kimi-code"),
        ("openhands/.openhands/conversations", "openhands"),
        ("openhands-v0/.openhands/sessions", "openhands-v0"),
        ("openhands-v0/.openhands/sessions/7f3c2a1b9e8d4c6fa0b1c2d3e4f5a6b7", "openhands-v0"),
    ],
)
def test_registry_detects_each_format_from_its_file_or_folder(fixtures: Path, relative: str, expected: str) -> None:
    assert registry.detect(fixtures / relative).name == expected


@pytest.mark.parametrize(("folder", "expected"), [("claude/export-2024", "claude"), ("chatgpt/sharded", "chatgpt")])
def test_registry_detects_exports_inside_zips(fixtures: Path, zip_dir, folder: str, expected: str) -> None:
    assert registry.detect(zip_dir(fixtures / folder, "export/")).name == expected


def test_registry_detects_cursor_databases_and_user_folders(cursor_user_dir: Path) -> None:
    assert registry.detect(cursor_user_dir).name == "cursor"
    assert registry.detect(cursor_user_dir / "globalStorage" / "state.vscdb").name == "cursor"
    assert registry.detect(cursor_user_dir / "workspaceStorage").name == "cursor"


def test_registry_still_sends_plain_files_to_the_plain_importer(tmp_path: Path) -> None:
    plain = tmp_path / "chats.jsonl"
    plain.write_text(json.dumps({"id": "c-1", "messages": [{"role": "user", "text": "hi"}]}) + "\n")

    assert registry.detect(plain).name == "plain"


def test_registry_rejects_a_zip_with_nothing_it_knows(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("cat.jpg", b"\xff\xd8")

    with pytest.raises(SourceError, match="cannot tell what kind of chat history"):
        registry.detect(archive)


def test_registry_lists_every_format_once_exports_first_and_plain_last() -> None:
    names = registry.names()
    assert len(set(names)) == len(names)
    assert names[:2] == ["claude", "chatgpt"]
    assert names[-1] == "plain"
    assert names[2:-1] == [importer.name for importer in registry.AGENT_LOGS]
    # Detection order that matters: Qwen Code's records would pass Claude Code's looser test, and a VS
    # Code folder holds state.vscdb files as Cursor's does.
    assert names.index("qwen-code") < names.index("claude-code")
    assert names.index("copilot-chat") < names.index("cursor")


class Recorded(Mapping[str, str]):
    """An environment that remembers every variable looked up in it."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self.values[key]

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return key in self.values

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("an importer looks up its own variables, never the whole environment")

    def __len__(self) -> int:
        return len(self.values)


AGENTS = {importer.name: importer for importer in registry.AGENT_LOGS}


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_agent_reads_the_variables_it_declares_and_no_other(name: str, tmp_path: Path) -> None:
    importer = AGENTS[name]
    home = tmp_path / "home"
    read: set[str] = set()
    every = {variable: str(tmp_path / "moved" / variable) for variable in registry.AGENT_VARIABLES}
    for values in ({}, every):
        for platform in PLATFORMS:
            env = Recorded(values)
            importer.default_locations(env, home, platform)
            read |= env.read
    assert read == set(importer.variables)


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_agent_keeps_its_sessions_in_the_home_on_every_system(name: str, tmp_path: Path) -> None:
    """With none of its variables set, every place an agent is looked for is in the user's home."""
    home = tmp_path / "home"
    for platform in PLATFORMS:
        locations = AGENTS[name].default_locations({}, home, platform)
        assert all(home in location.parents for location in locations), (platform, locations)


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_declared_variable_says_what_it_moves(name: str) -> None:
    for variable, description in AGENTS[name].variables.items():
        assert variable.isupper()
        assert description.strip()
        assert "\n" not in description
        assert not description.endswith("."), "one line, joined into the settings' help"
        assert registry.AGENT_VARIABLES[variable].startswith(description), "one description for each variable"


def test_conversation_with_the_opt_out_marker_is_skipped_by_every_importer(fixtures: Path, tmp_path: Path) -> None:
    export = tmp_path / "export"
    shutil.copytree(fixtures / "claude" / "export-2024", export)
    data = json.loads((export / "conversations.json").read_text())
    data[0]["chat_messages"][0]["text"] += "\n  pastchats: do-not-index\n"
    (export / "conversations.json").write_text(json.dumps(data))
    session = tmp_path / "cc" / "s.jsonl"
    session.parent.mkdir()
    session.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s",
                "parentUuid": None,
                "uuid": "u",
                "cwd": "/p",
                "message": {"role": "user", "content": "secret\npastchats: do-not-index"},
            }
        )
        + "\n"
    )

    for path in (export, session):
        conversations, report = registry.read(path)
        assert list(conversations) == []
        assert "opt-out marker" in [skip.reason for skip in report.skipped]


def test_marker_inside_a_sentence_does_not_opt_out(tmp_path: Path) -> None:
    plain = tmp_path / "chats.jsonl"
    text = "how would I add a line like pastchats: do-not-index to a chat?"
    plain.write_text(json.dumps({"id": "c-1", "messages": [{"role": "user", "text": text}]}) + "\n")

    conversations, report = registry.read(plain)

    assert [c.id for c in conversations] == ["c-1"]
    assert report.skipped == []


def test_a_source_that_gives_no_chats_and_no_reason_is_said_to_be_empty(tmp_path: Path) -> None:
    empty = tmp_path / "chats.jsonl"
    empty.write_text(json.dumps({"conversations": []}) + "\n", encoding="utf-8")

    conversations, report = registry.read(empty, "plain")

    assert list(conversations) == []
    assert report.notes == ["chats.jsonl holds no plain conversations: nothing in it could be read as one"]


@pytest.mark.parametrize(
    ("folder", "name"),
    [(folder, importer.name) for importer in registry.AGENT_LOGS for folder in session_folders(importer)],
    ids=lambda value: str(value.relative_to(FIXTURES)) if isinstance(value, Path) else value,
)
def test_no_other_format_takes_what_an_agent_claims_in_its_fixtures(folder: Path, name: str) -> None:
    """Detection tries the formats in order: an agent's session, or its folder, goes to that agent."""
    importer = registry.agent_log(name)
    claimed = [path for path in [folder, *importer.session_files(folder)] if importer.detect(path)]
    assert claimed
    for path in claimed:
        assert registry.detect(path).name == name, path
