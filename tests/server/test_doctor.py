"""`pastchats doctor`: each problem it claims to detect is detected, with the command that fixes it."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from storage.library import Library
from storage.writing.locks import WriteLock
from tests.storage.helpers import conversation

CHATS = [
    conversation("nginx", ["How do I put nginx in front of Jellyfin?", "Use proxy_pass to port 8096."]),
    conversation("bread", ["My sourdough starter smells of acetone", "Feed it twice a day."], day=1),
]


@pytest.fixture
def machine(tmp_path: Path, model_cache_dir: Path) -> dict[str, str]:
    """A user's machine: a home with no agent logs, the real model installed, no client configured."""
    (tmp_path / "user").mkdir()
    return {
        "PASTCHATS_HOME": str(tmp_path / "store"),
        "PASTCHATS_USER_HOME": str(tmp_path / "user"),
        "PASTCHATS_MODEL_CACHE": str(model_cache_dir),
        "PASTCHATS_AGENT_ENV": "{}",
        "PASTCHATS_SYNC_PATHS": "[]",
    }


def doctor(env: dict[str, str], *args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner(env=env).invoke(cli, ["doctor", "--json", *args])
    return result, {check["name"]: check for check in json.loads(result.stdout)["checks"]}


def run_doctor(env: dict[str, str], *args: str) -> Result:
    return CliRunner(env=env).invoke(cli, ["doctor", *args])


def healthy(env: dict[str, str], model_cache_dir: Path) -> None:
    Library.open(Path(env["PASTCHATS_HOME"]), cache_dir=model_cache_dir).import_conversations(CHATS)
    result = CliRunner(env=env).invoke(cli, ["setup", "cursor"])
    assert result.exit_code == 0, result.output


def test_a_healthy_machine_passes_every_check(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    result, checks = doctor(machine)
    assert result.exit_code == 0, result.output
    assert all(check["ok"] for check in checks.values())
    assert checks["store"]["details"]["conversations"] == 2
    assert "cursor" in checks["clients"]["details"]["configured"]
    text = CliRunner(env=machine).invoke(cli, ["doctor"])
    assert text.exit_code == 0
    assert text.stdout.strip().endswith("All good.")


def test_a_model_that_is_not_installed_is_reported_with_the_install_command(
    machine: dict[str, str], model_cache_dir: Path, tmp_path: Path
) -> None:
    healthy(machine, model_cache_dir)
    result, checks = doctor({**machine, "PASTCHATS_MODEL_CACHE": str(tmp_path / "no-models")})
    assert result.exit_code == 1
    assert not checks["model"]["ok"]
    assert checks["model"]["fix"].startswith("pastchats model install sentence-transformers/all-MiniLM-L6-v2")


def test_an_empty_store_is_reported_with_the_commands_that_fill_it(machine: dict[str, str]) -> None:
    result, checks = doctor(machine)
    assert result.exit_code == 1
    assert not checks["store"]["ok"]
    assert "pastchats import --sample" in checks["store"]["fix"]


def test_a_keyword_index_out_of_step_is_reported_and_fixed(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    shutil.rmtree(Path(machine["PASTCHATS_HOME"]) / "keyword")
    result, checks = doctor(machine)
    assert result.exit_code == 1
    # four messages and one exchange window per two-message chat
    assert "keyword index has 0 passages, the store 6" in checks["store"]["summary"]
    assert checks["store"]["fix"] == "pastchats doctor --fix"
    fixed, checks = doctor(machine, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert checks["store"]["ok"]


def test_a_write_cut_short_is_reported(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    WriteLock(Path(machine["PASTCHATS_HOME"])).begin(["nginx"])
    result, checks = doctor(machine)
    assert result.exit_code == 1
    assert "left half-written" in checks["store"]["summary"]


def test_a_delete_cut_short_is_reported_and_finished_by_the_fix(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    WriteLock(Path(machine["PASTCHATS_HOME"])).commit_delete(["bread"])  # killed right after its commit point
    result, checks = doctor(machine)
    assert result.exit_code == 1
    assert "1 chat(s) a delete or forget has not finished removing (still on disk)" in checks["store"]["summary"]
    assert checks["store"]["fix"] == "pastchats doctor --fix"
    fixed, checks = doctor(machine, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert checks["store"]["details"]["unfinished_deletes"] == 0
    assert checks["store"]["details"]["conversations"] == 1


def test_passages_awaiting_embeddings_are_counted_and_embedded_by_the_fix(
    machine: dict[str, str], model_cache_dir: Path, tmp_path: Path
) -> None:
    healthy(machine, model_cache_dir)
    Library.open(Path(machine["PASTCHATS_HOME"]), cache_dir=tmp_path / "no-models").import_conversations(
        [conversation("late", ["a zeppelin hangar question", "an answer"], day=3)]
    )
    result, checks = doctor(machine)
    assert result.exit_code == 1
    assert checks["store"]["details"]["awaiting_embeddings"] == 2 + 1  # two messages and their window
    assert checks["store"]["fix"] == "pastchats doctor --fix"
    fixed, checks = doctor(machine, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert checks["store"]["details"]["awaiting_embeddings"] == 0


def test_a_sync_path_that_does_not_exist_is_reported(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    result, checks = doctor({**machine, "PASTCHATS_SYNC_PATHS": '["/nowhere/at/all"]'})
    assert result.exit_code == 1
    assert "/nowhere/at/all: does not exist" in checks["sources"]["summary"]


def test_agent_logs_sync_would_read_are_counted(machine: dict[str, str], model_cache_dir: Path) -> None:
    healthy(machine, model_cache_dir)
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "claude-code" / "projects"
    shutil.copytree(fixtures, Path(machine["PASTCHATS_USER_HOME"]) / ".claude" / "projects")
    result, checks = doctor(machine)
    assert result.exit_code == 0, result.output
    assert checks["sources"]["details"]["files"]["claude-code"] >= 1


def test_no_configured_client_is_reported_with_the_setup_command(
    machine: dict[str, str], model_cache_dir: Path
) -> None:
    """Many use the CLI alone, or a client `setup` does not know: a warning, and the exit status stays 0."""
    Library.open(Path(machine["PASTCHATS_HOME"]), cache_dir=model_cache_dir).import_conversations(CHATS)
    result, checks = doctor(machine)
    assert result.exit_code == 0, result.output
    assert (checks["clients"]["ok"], checks["clients"]["warning"], checks["clients"]["failed"]) == (False, True, False)
    assert checks["clients"]["fix"].startswith("pastchats setup claude-desktop")
    text = run_doctor(machine)
    assert (text.exit_code, text.stdout.strip().splitlines()[-1]) == (0, "All good, 1 warning(s).")
    assert "\nwarn clients: " in text.stdout
    cli_alone = run_doctor(machine, "--cli")
    assert cli_alone.exit_code == 0
    assert "clients" not in cli_alone.stdout
    asked = run_doctor(machine, "--client", "cursor")  # the one asked about must be there
    assert asked.exit_code == 1
    assert "BAD  clients: Cursor is not configured to start pastchats\n    fix: pastchats setup cursor" in asked.stdout


def test_a_client_configured_with_a_command_that_no_longer_exists_is_reported(
    machine: dict[str, str], model_cache_dir: Path
) -> None:
    healthy(machine, model_cache_dir)
    config = Path(machine["PASTCHATS_USER_HOME"]) / ".cursor" / "mcp.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["mcpServers"]["pastchats"]["command"] = "/old/venv/bin/pastchats"
    config.write_text(json.dumps(data), encoding="utf-8")
    result, checks = doctor(machine)
    assert result.exit_code == 1
    assert checks["clients"]["fix"] == "pastchats setup cursor"


@pytest.mark.skipif(os.name == "nt", reason="Windows keeps the store private by its folder's ACL")
def test_a_store_archive_or_model_cache_others_can_read_is_reported_and_tightened_by_the_fix(
    machine: dict[str, str], model_cache_dir: Path, tmp_path: Path
) -> None:
    env = {**machine, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # pastchats' own cache, of this test
    healthy(env, model_cache_dir)
    home = Path(env["PASTCHATS_HOME"])
    copy = home / "archive" / "claude-code" / "home" / "ana" / "session.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_text("{}\n", encoding="utf-8")
    derived = tmp_path / "cache" / "pastchats" / "models" / "derived" / "model.onnx"
    derived.parent.mkdir(parents=True)
    derived.write_bytes(b"onnx")
    # someone (a restore from backup, a chmod) let other users in again
    for path in (home, home / "store.json", copy, derived):
        path.chmod(0o755 if path.is_dir() else 0o644)

    result, checks = doctor(env)
    assert result.exit_code == 1
    permissions = checks["permissions"]
    assert not permissions["ok"]
    assert permissions["summary"] == (
        f"other users of this machine can read files and folders: 3 in the store at {home}, 1 in its archive of "
        f"agent logs; 1 in pastchats' model cache at {tmp_path / 'cache' / 'pastchats'}"
    )
    assert permissions["details"]["exposed"] == {"store": 3, "model cache": 1}
    assert permissions["fix"] == "pastchats doctor --fix"

    fixed, checks = doctor(env, "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert checks["permissions"]["ok"]
    assert [oct(stat.S_IMODE(p.stat().st_mode)) for p in (home, home / "store.json", copy, derived)] == [
        "0o700",
        "0o600",
        "0o600",
        "0o600",
    ]
