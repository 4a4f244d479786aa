"""Cline, Roo Code and Kilo Code tasks, in the folders each extension writes in VS Code's global storage
(Cline 3.x and Claude Dev 1.x, Roo Code 3.2x and 3.52, Kilo Code 4.x), broken ones included."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from importers import registry
from importers.base import SourceError
from importers.cline import ClineImporter
from importers.kilo_code import KiloCodeImporter
from importers.roo_code import RooCodeImporter

CLINE_USER = "cline/Code/User"
CLINE_STORAGE = f"{CLINE_USER}/globalStorage/saoudrizwan.claude-dev"
ROO_STORAGE = "roo-code/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline"
KILO_TASKS = "kilo-code/AppData/Roaming/Code/User/globalStorage/kilocode.kilo-code/tasks"
HEALTH = "cline:1754294400000"
SETTINGS = "roo-code:019bd3f2-6c1e-7a40-9c3b-2f5e8d7a6b41"
CART = "kilo-code:0d4c3b2a-1908-4f7e-8d6c-5b4a39281706"


def test_cline_task_reads_as_its_panel_shows_it(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / CLINE_USER)
    chat = imported.chat(HEALTH)

    assert chat.title == "add a health check endpoint to src/server.ts"
    assert chat.project == "/home/ana/src/api"
    assert (chat.created_at, chat.updated_at) == (
        datetime(2025, 8, 4, 8, 0, tzinfo=UTC),
        datetime(2025, 8, 4, 8, 1, 36, tzinfo=UTC),
    )
    assert [m.role for m in chat.messages] == [
        "user", "assistant", "assistant", "assistant", "assistant", "tool", "assistant",
        "user", "assistant", "user", "assistant", "assistant", "tool", "assistant",
    ]  # fmt: skip
    texts = [m.text for m in chat.messages]
    assert texts[2:5] == [
        "[tool readFile: src/server.ts]",
        "[tool editedExistingFile: src/server.ts]",
        "[tool execute_command: npm test]",
    ]
    assert texts[8] == "Should the sha come from a GIT_SHA environment variable or from git at startup?"
    assert texts[11] == "[tool github.get_file_contents: Dockerfile]"
    assert not [t for t in texts if "should read server.ts before editing" in t or "environment_details" in t]
    assert imported.found("deployed git sha") == [HEALTH]


def test_cline_broken_tasks_keep_what_was_written_and_say_what_was_not(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / CLINE_USER)

    assert [m.text for m in imported.chat("cline:1754380000000").messages] == ["bump express to 5"]
    assert "ui_messages.json: premature EOF" in imported.summary  # cut off mid-write
    assert "tasks/1754390000000/ui_messages.json: no messages" in imported.summary
    assert "ignored 1 message of unknown say type 'hologram'" in imported.summary
    assert "3 new, 0 updated, 0 unchanged, 1 skipped" in imported.summary


def test_claude_dev_tasks_from_before_cline_2_are_read(fixtures: Path, read_all) -> None:
    conversations, _ = read_all(ClineImporter(), fixtures / CLINE_STORAGE / "tasks" / "1721900000000")

    [chat] = conversations
    assert chat.id == "cline:1721900000000"
    assert [m.role for m in chat.messages] == ["user", "assistant", "assistant", "assistant"]
    assert chat.created_at == datetime(2024, 7, 25, 9, 33, 20, tzinfo=UTC)


def test_cline_without_its_history_list_finds_the_workspace_in_the_first_request(
    fixtures: Path, tmp_path: Path, read_all
) -> None:
    task = tmp_path / "tasks" / "1754294400000"
    shutil.copytree(fixtures / CLINE_STORAGE / "tasks" / "1754294400000", task)

    [chat], _ = read_all(ClineImporter(), task / "ui_messages.json")

    assert chat.project == "/home/ana/src/api"


def test_roo_code_tasks_take_their_workspace_from_the_history_item_or_the_first_request(
    fixtures: Path, import_fixture
) -> None:
    imported = import_fixture(fixtures / ROO_STORAGE)

    assert {c.id: c.project for c in imported.conversations} == {
        SETTINGS: "/Users/ana/src/console",  # history_item.json (3.48 and later)
        "roo-code:6a0f9e8d-7c6b-4a59-8483-726150493827": "/Users/ana/src/console",  # the first request (3.2x)
    }
    chat = imported.chat(SETTINGS)
    assert chat.messages[0].text == "the settings page loses unsaved edits when I switch tabs"
    assert chat.messages[2].text == "[tool readFile: src/settings/SettingsTabs.tsx src/settings/ProfileForm.tsx]"
    assert [m.role for m in chat.messages].count("user") == 2
    assert "Probably the form state lives" not in " ".join(m.text for m in chat.messages)


def test_kilo_code_legacy_tasks_keep_the_workspace_kilo_names(fixtures: Path, import_fixture) -> None:
    imported = import_fixture(fixtures / KILO_TASKS)

    [chat] = imported.conversations
    assert chat.id == CART
    assert chat.project == "C:\\Users\\ana\\src\\shop"  # one spelling of a Windows folder
    assert [m.role for m in chat.messages] == ["user", "assistant", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        (CLINE_USER, "cline"),
        (CLINE_STORAGE, "cline"),
        (f"{CLINE_STORAGE}/tasks/1754294400000", "cline"),
        (f"{CLINE_STORAGE}/tasks/1721900000000/claude_messages.json", "cline"),
        (ROO_STORAGE, "roo-code"),
        (f"{ROO_STORAGE}/tasks/{SETTINGS[9:]}/ui_messages.json", "roo-code"),
        (KILO_TASKS, "kilo-code"),
    ],
)
def test_each_task_folder_is_detected_as_its_writers(fixtures: Path, relative: str, expected: str) -> None:
    assert registry.detect(fixtures / relative).name == expected


def test_task_folders_copied_out_of_their_extension_are_told_apart_by_their_first_message(
    fixtures: Path, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / CLINE_STORAGE / "tasks", tmp_path / "cline" / "tasks")
    shutil.copytree(fixtures / ROO_STORAGE / "tasks", tmp_path / "roo" / "tasks")

    assert registry.detect(tmp_path / "cline").name == "cline"
    assert registry.detect(tmp_path / "roo").name == "roo-code"


@pytest.mark.parametrize(
    ("platform", "env", "user"),
    [
        ("linux", {}, "/home/ana/.config/Code/User"),
        ("linux", {"XDG_CONFIG_HOME": "/xdg"}, "/xdg/Code/User"),
        ("darwin", {}, "/home/ana/Library/Application Support/Code/User"),
        ("win32", {"APPDATA": "C:/Users/ana/AppData/Roaming"}, "C:/Users/ana/AppData/Roaming/Code/User"),
    ],
)
def test_task_folders_are_looked_for_in_every_editors_global_storage(
    platform: str, env: dict[str, str], user: str
) -> None:
    home = Path("/home/ana")

    cline = ClineImporter().default_locations(env, home, platform)
    assert Path(user) / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" in cline
    assert Path(str(Path(user)).replace("/Code/", "/Cursor/")) / "globalStorage/saoudrizwan.claude-dev/tasks" in cline
    assert home / ".vscode-server/data/User/globalStorage/saoudrizwan.claude-dev/tasks" in cline
    assert home / ".cline" / "data" / "tasks" in cline  # the CLI and JetBrains hosts
    assert Path(user) / "globalStorage/rooveterinaryinc.roo-cline/tasks" in RooCodeImporter().default_locations(
        env, home, platform
    )
    assert Path(user) / "globalStorage/kilocode.kilo-code/tasks" in KiloCodeImporter().default_locations(
        env, home, platform
    )
    assert ClineImporter().default_locations({"CLINE_DIR": "/opt/cline"}, home, platform)[-1] == Path(
        "/opt/cline/data/tasks"
    )


CLINE_3 = "cline-3/tasks"
RETRY = "cline:1767258000000"


def test_a_cline_3_task_copied_out_of_the_extension_is_cline_by_its_own_marks(fixtures: Path, import_fixture) -> None:
    # Cline 3.x writes the task as `say: "text"`, as Roo Code does; its focus chain file, its
    # task_progress messages and its `{"request": …}` without `apiProtocol` say whose it is.
    assert registry.detect(fixtures / CLINE_3).name == "cline"
    assert registry.detect(fixtures / CLINE_3 / "1767258000000" / "ui_messages.json").name == "cline"

    imported = import_fixture(fixtures / CLINE_3)

    [chat] = imported.conversations
    assert chat.id == RETRY
    assert chat.title == "make the retry backoff exponential, capped at 30 seconds"
    assert chat.project == "/home/ana/src/fetcher"  # the first request's "# Current Working Directory (…)"
    assert [(m.role, m.text) for m in chat.messages if m.role != "assistant" or not m.text.startswith("[tool")] == [
        ("user", "make the retry backoff exponential, capped at 30 seconds"),
        ("assistant", "I'll read the retry helper first."),
        ("assistant", "The delay is a fixed 500 ms. I'll double it per attempt and cap it at 30 s."),
        ("user", "also add jitter please"),
        ("assistant", "Retry delays now double from 500 ms up to 30 s, with up to 20% jitter."),
    ]
    assert not any("- [x]" in m.text for m in chat.messages)  # the focus chain's checklist is not the chat


def test_format_cline_is_honoured_for_any_task_folder(fixtures: Path, tmp_path: Path, import_fixture) -> None:
    # A task folder whose marks point to Roo Code is still read as Cline's when the user says so.
    shutil.copytree(fixtures / ROO_STORAGE / "tasks", tmp_path / "tasks")
    assert registry.choose(tmp_path / "tasks", "cline").name == "cline"

    imported = import_fixture(tmp_path / "tasks", "cline")

    assert {c.id.split(":")[0] for c in imported.conversations} == {"cline"}
    assert len(imported.conversations) == 2
    with pytest.raises(SourceError, match="looks like"):
        registry.choose(fixtures / CLINE_3, "claude-code")


def test_a_task_without_any_writers_mark_is_read_as_roo_codes(fixtures: Path, tmp_path: Path) -> None:
    shutil.copytree(fixtures / KILO_TASKS, tmp_path / "tasks")  # `apiProtocol` in its requests: Roo Code's line
    assert registry.detect(tmp_path / "tasks").name in {"roo-code", "kilo-code"}


def test_a_cline_task_whose_long_first_prompt_hides_its_requests_is_cline_by_its_metadata(
    fixtures: Path, tmp_path: Path
) -> None:
    # A pasted prompt longer than the head detection reads; no focus chain file: the version Cline
    # records in task_metadata.json still says whose task it is.
    task = tmp_path / "tasks" / "1767258000000"
    shutil.copytree(fixtures / CLINE_3 / "1767258000000", task)
    (task / "focus_chain_taskid_1767258000000.md").unlink()
    messages = json.loads((task / "ui_messages.json").read_text())
    messages[0]["text"] += "\n" + "x = 1\n" * 20000
    (task / "ui_messages.json").write_text(json.dumps(messages, separators=(",", ":")))

    assert registry.detect(tmp_path / "tasks").name == "cline"
    (task / "task_metadata.json").unlink()
    assert registry.detect(tmp_path / "tasks").name == "roo-code"  # nothing of Cline's left to tell


def test_a_cline_task_in_a_multi_root_workspace_is_in_its_primary_folder(
    fixtures: Path, tmp_path: Path, import_fixture
) -> None:
    # With several folders open, Cline names the primary one in the working directory's heading and
    # lists each folder's path under "# Workspace Roots".
    task = tmp_path / "tasks" / "1767258000000"
    shutil.copytree(fixtures / CLINE_3 / "1767258000000", task)
    messages = json.loads((task / "ui_messages.json").read_text())
    request = json.loads(messages[1]["text"])
    request["request"] = (
        request["request"]
        .replace(
            "<environment_details>",
            "<environment_details>\n\n# Workspace Roots\n- api: /home/ana/src/api (Git)"
            "\n- fetcher: /home/ana/src/fetcher (Git)\n\nPrimary workspace: fetcher",
        )
        .replace(
            "# Current Working Directory (/home/ana/src/fetcher) Files",
            "# Current Working Directory (Primary: fetcher) Files",
        )
    )
    messages[1]["text"] = json.dumps(request)
    (task / "ui_messages.json").write_text(json.dumps(messages))
    (task / "api_conversation_history.json").unlink()  # the panel's copy of the request is all there is

    imported = import_fixture(tmp_path / "tasks", "cline")

    assert [c.project for c in imported.conversations] == ["/home/ana/src/fetcher"]
