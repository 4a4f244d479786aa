"""Settings: every one documented, read from the right variables, and read nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import AliasChoices

from importers.registry import AGENT_VARIABLES
from server.cli import cli
from server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def variable(name: str) -> str:
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        assert isinstance(first, str)
        return first
    return f"PASTCHATS_{name.upper()}"


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_is_documented_in_the_readme_settings_table(name: str) -> None:
    table = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    assert f"| `{variable(name)}` |" in table


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_has_a_description(name: str) -> None:
    assert Settings.model_fields[name].description


def test_the_model_cache_comes_from_fastembeds_own_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PASTCHATS_MODEL_CACHE", raising=False)
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    assert Settings().model_cache == tmp_path


def test_the_model_cache_defaults_to_pastchats_own_folder_not_fastembeds_temporary_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PASTCHATS_MODEL_CACHE", raising=False)
    monkeypatch.delenv("FASTEMBED_CACHE_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # platformdirs' own variable on Linux
    cache = Settings().model_cache
    assert cache.parts[-2:] == ("pastchats", "models")
    assert "fastembed_cache" not in str(cache)


def test_environment_variables_are_read_with_the_pastchats_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASTCHATS_PORT", "9999")
    monkeypatch.setenv("PASTCHATS_HTTP_TOKEN", "t")
    settings = Settings()
    assert (settings.port, settings.http_token) == (9999, "t")


@pytest.mark.usefixtures("hash_embedder")
def test_a_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PASTCHATS_HOME", str(tmp_path / "from-env"))
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "from-flag"), "stats", "--json"])
    assert result.exit_code == 0, result.output
    assert '"home": "' + str(tmp_path / "from-flag") in result.stdout


def test_no_module_but_the_settings_readers_reads_the_environment() -> None:
    readers = re.compile(r"os\.environ|os\.getenv|getenv\(")
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("server", "tools")
        for path in (ROOT / package).rglob("*.py")
        if readers.search(path.read_text(encoding="utf-8")) and path != ROOT / "server" / "settings.py"
    ]
    assert offenders == []


@pytest.mark.parametrize("name", list(AGENT_VARIABLES))
def test_every_agent_variable_is_read_and_documented(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each variable an importer declares is read into the settings, named in their help and in the
    README's table of where sync looks."""
    monkeypatch.setenv(name, "/somewhere")
    assert Settings().agent_env[name] == "/somewhere"
    assert f"`{name}`" in (Settings.model_fields["agent_env"].description or "")
    sync = README.split("## Keeping up to date: sync", 1)[1].split("\n## ", 1)[0]
    assert name in sync
