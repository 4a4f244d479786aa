"""One rule across commands for the names and dates people type: an unknown project or source fails
with the known ones (exit 1) wherever it is typed, names match case-insensitively, and a date may be
relative (yesterday, 7d, 2w, last monday). Run through the real CLI on the imported sample."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli
from server.cli.common import WHEN

KNOWN_PROJECTS = "known: family, health, home, learning, travel, work. Pass one of them, or leave --project out"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, model_cache_dir: Path) -> dict[str, str]:
    env = {
        "PASTCHATS_HOME": str(tmp_path_factory.mktemp("store")),
        "PASTCHATS_MODEL_CACHE": str(model_cache_dir),
        "PASTCHATS_SYNC": "false",
    }
    assert run(env, "import", "--sample").exit_code == 0
    return env


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner(env=env).invoke(cli, list(args))


@pytest.mark.parametrize(
    "command",
    [
        ("recent", "--project", "nosuch"),
        ("search", "budget", "--project", "nosuch"),
        ("export", "--project", "nosuch"),
        ("forget", "--project", "nosuch", "--yes"),
    ],
)
def test_an_unknown_project_fails_with_the_known_ones_in_every_command(
    env: dict[str, str], command: tuple[str, ...]
) -> None:
    result = run(env, *command)
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: --project 'nosuch' is not a known project; {KNOWN_PROJECTS}\n"


@pytest.mark.parametrize("command", [("export", "--source", "chatgpt"), ("forget", "--source", "chatgpt", "--yes")])
def test_an_unknown_source_fails_with_the_known_ones(env: dict[str, str], command: tuple[str, ...]) -> None:
    result = run(env, *command)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --source 'chatgpt' is not a known source; known: sample. Pass one of them, or leave --source out\n"
    )


def test_projects_and_sources_match_whatever_their_case(env: dict[str, str]) -> None:
    exact = run(env, "export", "--project", "work", "--source", "sample")
    shouted = run(env, "export", "--project", "WORK", "--source", "Sample")
    assert exact.exit_code == shouted.exit_code == 0
    assert exact.stdout == shouted.stdout
    assert len(exact.stdout.splitlines()) >= 1
    recent = run(env, "recent", "--project", "Work", "--json")
    assert {chat["project"] for chat in json.loads(recent.stdout)["chats"]} == {"work"}


def test_nothing_to_do_is_not_a_failure(env: dict[str, str]) -> None:
    result = run(env, "forget", "--project", "work", "--before", "2000-01-01", "--yes")
    assert (result.exit_code, result.stdout) == (0, "Nothing matched.\n")


@pytest.mark.parametrize(
    ("typed", "ago"),
    [
        ("yesterday", timedelta(days=1)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("3 days ago", timedelta(days=3)),
    ],
)
def test_relative_dates_count_back_from_now(typed: str, ago: timedelta) -> None:
    assert abs(WHEN.convert(typed, None, None) - (datetime.now(UTC) - ago)) < timedelta(minutes=1)


def test_last_monday_is_a_monday_in_the_past_week_and_iso_stays_exact() -> None:
    monday = WHEN.convert("last monday", None, None)
    assert monday.weekday() == 0
    assert timedelta(0) < datetime.now(UTC) - monday <= timedelta(days=8)
    assert WHEN.convert("2025-01-20T10:00Z", None, None) == datetime(2025, 1, 20, 10, tzinfo=UTC)


def test_every_date_option_takes_relative_dates(env: dict[str, str]) -> None:
    assert run(env, "recent", "--after", "2w", "--before", "yesterday", "--json").exit_code == 0
    assert run(env, "search", "budget", "--after", "last monday", "--json").exit_code == 0
    assert run(env, "forget", "--before", "7d", "--project", "nosuch", "--yes").exit_code == 1  # the name, not the date
    wrong = run(env, "recent", "--after", "the other day")
    assert wrong.exit_code == 2
    assert "'the other day' is not a date: give one as a date (2025-01-20)" in wrong.stderr


def test_search_help_says_the_dates_filter_messages() -> None:
    text = " ".join(CliRunner().invoke(cli, ["search", "--help"]).stdout.split())
    assert "--after DATE Only messages written after this time: a date (2025-01-20)" in text
    assert "chats updated" not in text
