"""The files each agent's tool calls read, edited or created and the commands they ran, as read from
logs in the shapes the agents write (`importers._touches`, and each importer's own names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from importers import registry
from importers._safe import resolved
from importers._touches import touches_of
from storage.models import Conversation, Touch
from tests.agent_fixtures import session_folders

from .conftest import build_vscdb

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "importers"


def _read(path: Path, format: str) -> dict[str, Conversation]:
    conversations, report = registry.read(path, format)
    chats = {c.id: c for c in conversations}
    assert not report.skipped, report.skipped
    return chats


def _chat(format: str, chat_id: str) -> Conversation:
    """The chat `chat_id` from the format's fixtures, read as sync reads it (`registry.read`); an id
    from `…` on is the chat whose id ends so (aider's ids name the folder the fixtures are in)."""
    importer = registry.agent_log(format)
    for folder in session_folders(importer):
        for file in importer.session_files(folder):
            for conversation in registry.read(file, format)[0]:
                if conversation.id == chat_id or (chat_id[0] == "…" and conversation.id.endswith(chat_id[1:])):
                    return conversation
    raise LookupError(f"no chat {chat_id} in the fixtures of {format}")


def _touches(chat: Conversation) -> list[tuple[str, str]]:
    return [(t.action, t.target) for m in chat.messages for t in m.touches]


def test_claude_code_edit_multiedit_write_notebook_read_and_bash() -> None:
    chat = _chat("claude-code", "claude-code:a7e51c02-5d1b-4e8a-9c3f-1b2d3e4f5a61")
    assert _touches(chat) == [
        ("read", "/home/ana/src/auth/auth/session.py"),
        ("edited", "/home/ana/src/auth/auth/session.py"),
        ("edited", "/home/ana/src/auth/api/routes.py"),
        ("created", "/home/ana/src/auth/tests/test_expiry.py"),
        ("edited", "/home/ana/src/auth/notebooks/expiry.ipynb"),
        ("ran", "uv run pytest tests/test_expiry.py -q"),
    ]
    # on the message that made the call, and nowhere else
    edit = next(m for m in chat.messages if "[tool Edit:" in m.text)
    assert edit.touches == (Touch("edited", "/home/ana/src/auth/auth/session.py"),)
    assert all(not m.touches for m in chat.messages if m.role != "assistant")


def test_codex_shell_commands_and_apply_patch_headers() -> None:
    chat = _chat("codex", "codex:019e1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a61")
    # `["bash", "-lc", "rg ..."]`: the script is the command; the patch's header names the file, relative
    # to the session's folder
    assert _touches(chat) == [
        ("ran", "rg -n 'def decode' geo/geohash.py"),
        ("edited", "/home/ana/src/geo/geo/geohash.py"),
    ]


def test_gemini_cli_read_file_replace_write_file_and_shell() -> None:
    chat = _chat("gemini", "gemini:5b6c7d8e-2222-4000-8000-0000000000e1")
    assert _touches(chat) == [
        ("read", "/home/ana/src/units/units/convert.py"),
        ("edited", "/home/ana/src/units/units/convert.py"),
        ("created", "/home/ana/src/units/tests/test_feet.py"),
        ("ran", "python -m pytest tests/test_feet.py -q"),
    ]
    older = _chat("gemini", "gemini:2c4e6a80-1111-4000-8000-0000000000a1")
    assert ("read", "/home/ana/src/weather/README.md") in _touches(older)  # `absolute_path`, as 2025 wrote it


def test_opencode_bash_edit_and_read_parts() -> None:
    assert _touches(_chat("opencode-files", "opencode:ses_6a1f0c2b3ffeA1b2C3d4E5f6G7")) == [
        ("ran", "npx vitest run tests/checkout.test.ts"),
        ("edited", "/home/ana/src/shop/src/cart/coupon.ts"),
        ("read", "/home/ana/src/shop/src/cart/tax.ts"),
    ]


@pytest.mark.parametrize(
    ("format", "chat", "expected"),
    [
        (
            "cline",
            "cline:1754294400000",
            [
                ("read", "/home/ana/src/api/src/server.ts"),
                ("edited", "/home/ana/src/api/src/server.ts"),
                ("ran", "npm test"),
            ],
        ),
        (
            "roo-code",
            "roo-code:019bd3f2-6c1e-7a40-9c3b-2f5e8d7a6b41",
            [
                ("read", "/Users/ana/src/console/src/settings/SettingsTabs.tsx"),
                ("read", "/Users/ana/src/console/src/settings/ProfileForm.tsx"),
                ("edited", "/Users/ana/src/console/src/settings/SettingsTabs.tsx"),
                ("ran", "npm run test -- settings"),
            ],
        ),
    ],
)
def test_cline_and_roo_code_tool_messages(format: str, chat: str, expected: list[tuple[str, str]]) -> None:
    """Cline's and Roo Code's own names (`readFile`, `editedExistingFile`, a batch of files, `command`)."""
    assert _touches(_chat(format, chat)) == expected


def test_cursor_read_edit_search_replace_and_terminal(tmp_path: Path) -> None:
    user = tmp_path / "Cursor" / "User"
    shapes = FIXTURES / "cursor-edits"
    build_vscdb(user / "globalStorage" / "state.vscdb", json.loads((shapes / "global.json").read_text()))
    workspace = user / "workspaceStorage" / "5e4d3c2b1a09"
    build_vscdb(workspace / "state.vscdb", json.loads((shapes / "workspace.json").read_text()))
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///home/ana/src/catalog"}))
    chat = _read(user, "cursor")["cursor:3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"]
    # Cursor writes paths relative to the workspace: read against the chat's folder
    assert _touches(chat) == [
        ("read", "/home/ana/src/catalog/src/filters/price.ts"),
        ("edited", "/home/ana/src/catalog/src/filters/price.ts"),
        ("edited", "/home/ana/src/catalog/src/filters/index.ts"),
        ("ran", "npm test -- filters"),
    ]


def test_copilot_chat_edit_groups_file_tools_and_terminal() -> None:
    assert _touches(_chat("copilot-chat", "copilot-chat:4b0f9a7c-2d3e-4f51-8a6b-7c9d0e1f2a3b")) == [
        ("read", "/home/ana/src/shop/src/cart.ts"),
        ("edited", "/home/ana/src/shop/src/cart.ts"),
        ("ran", "npm test -- cart"),
    ]


def test_copilot_cli_view_edit_and_bash() -> None:
    assert _touches(_chat("copilot-cli", "copilot-cli:2f8d9c41-7a3e-4b6d-9e1f-0c2b3a4d5e6f")) == [
        ("read", "/home/ana/src/atlas/src/zoom.ts"),
        ("edited", "/home/ana/src/atlas/src/zoom.ts"),
    ]


def test_aider_applied_edits_and_files_added_to_the_chat() -> None:
    folder = FIXTURES / "aider-0.86"
    chat = _chat("aider", "…:2026-02-11T14:03:22")
    assert _touches(chat) == [
        ("read", f"{folder}/src/retry.py"),
        ("read", f"{folder}/tests/test_retry.py"),
        ("edited", f"{folder}/src/retry.py"),
    ]


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("Read", {"file_path": "/a/b.py"}, [("read", "/a/b.py")]),
        ("MultiEdit", {"file_path": "/a/b.py", "edits": []}, [("edited", "/a/b.py")]),
        ("write_to_file", {"path": "src/x.ts", "content": "…"}, [("created", "src/x.ts")]),
        ("apply_diff", {"path": "src/x.ts", "diff": "<<<<<<< SEARCH"}, [("edited", "src/x.ts")]),
        ("execute_command", {"command": "npm run build"}, [("ran", "npm run build")]),
        ("read", {"filePath": "/a/c.ts"}, [("read", "/a/c.ts")]),  # OpenCode
        ("read_many_files", {"paths": ["/a/x.md", "docs/*.md"]}, [("read", "/a/x.md")]),
        ("shell", {"command": ["bash", "-lc", "cargo test"], "workdir": "/r"}, [("ran", "cargo test")]),
        (
            "shell",
            {"command": ["apply_patch", "*** Begin Patch\n*** Add File: n.py\n+x\n*** End Patch"]},
            [("created", "n.py")],
        ),
        (
            "apply_patch",
            "*** Begin Patch\n*** Update File: a/b.rs\n*** Move to: a/c.rs\n@@\n*** End Patch",
            [
                ("edited", "a/b.rs"),
                ("edited", "a/c.rs"),
            ],
        ),
        ("str_replace_editor", {"command": "view", "path": "/w/app.py"}, [("read", "/w/app.py")]),
        ("str_replace_editor", {"command": "create", "path": "/w/new.py"}, [("created", "/w/new.py")]),
        ("developer__text_editor", {"command": "str_replace", "path": "/w/app.py"}, [("edited", "/w/app.py")]),
        ("developer__shell", {"command": "ls -la"}, [("ran", "ls -la")]),
        ("read_file", {"path": "lib/a.ex"}, [("read", "lib/a.ex")]),
        ("Grep", {"pattern": "TODO", "path": "src"}, []),  # searching names no file it read
        ("Bash", '{"command": "make"}', [("ran", "make")]),  # arguments as their JSON text
        ("Edit", "not json", []),
    ],
)
def test_the_shared_tool_vocabulary(name: str, arguments: object, expected: list[tuple[str, str]]) -> None:
    assert [(t.action, t.target) for t in touches_of(name, arguments)] == expected


def test_a_command_line_is_redacted_as_a_tool_summary_is() -> None:
    (touch,) = touches_of(
        "Bash", {"command": "curl -H 'Authorization: Bearer ghp_0123456789abcdefABCDEF0123456789abcd' x"}
    )
    assert touch.action == "ran"
    assert "ghp_0123456789" not in touch.target
    assert "[redacted: " in touch.target


@pytest.mark.parametrize(
    ("target", "folder", "expected"),
    [
        ("auth/session.py", "/home/ana/shop", "/home/ana/shop/auth/session.py"),
        ("./a/../b.py", "/home/ana/shop/", "/home/ana/shop/b.py"),
        ("src\\x.py", "C:\\Users\\ana\\shop", "C:\\Users\\ana\\shop\\src\\x.py"),
        ("/c:/Users/ana/x.py", None, "C:\\Users\\ana\\x.py"),
        ("c:/Users/ana/x.py", None, "C:\\Users\\ana\\x.py"),
        ("x.py", None, "x.py"),  # no folder to read it against: kept as written
    ],
)
def test_paths_are_spelt_as_projects_are(target: str, folder: str | None, expected: str) -> None:
    assert resolved(Touch("edited", target), folder).target == expected
    assert resolved(Touch("ran", "cd src && ls"), folder).target == "cd src && ls"
