"""The read-only commands' settings reader agrees with `Settings`, field by field, or declines."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import platformdirs
import pytest
from pydantic import AliasChoices, ValidationError
from pydantic_settings import SettingsError

from server.settings import Settings
from server.settings_quick import VARIABLES, default_home, default_model_cache, quick_settings

FIELDS = ("home", "model", "output_budget_chars", "log_level", "log_file", "model_cache")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.lower() in {name for names in VARIABLES.values() for name in names}:
            monkeypatch.delenv(key)


def test_the_reader_knows_every_setting_and_the_variables_it_is_read_from() -> None:
    expected = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = alias.choices if isinstance(alias, AliasChoices) else [f"pastchats_{name}"]
        expected[name] = tuple(str(n).lower() for n in names)
    assert expected == VARIABLES


ENVIRONMENTS: list[dict[str, str]] = [
    {},
    {"PASTCHATS_HOME": "/srv/chats"},
    {"pastchats_home": "/srv/lower-case"},
    {"PASTCHATS_HOME": "/a", "pastchats_home": "/b"},
    {"PASTCHATS_HOME": ""},
    {"PASTCHATS_MODEL": "BAAI/bge-small-en-v1.5"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": "5000"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": "500"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": "05000"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": " 5000"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": "5_000"},
    {"PASTCHATS_OUTPUT_BUDGET_CHARS": "lots"},
    {"PASTCHATS_LOG_LEVEL": "INFO"},
    {"PASTCHATS_LOG_LEVEL": "info"},
    {"PASTCHATS_LOG_FILE": "/tmp/pastchats.log"},
    {"PASTCHATS_PORT": "9999"},
    {"PASTCHATS_PORT": "0"},
    {"PASTCHATS_PORT": "http"},
    {"PASTCHATS_SYNC": "off"},
    {"PASTCHATS_SYNC": "maybe"},
    {"PASTCHATS_SYNC_INTERVAL": "-1"},
    {"PASTCHATS_HOST": "0.0.0.0", "PASTCHATS_HTTP_TOKEN": "secret"},
    {"PASTCHATS_EXCLUDE_PROJECTS": '["work*"]'},
    {"PASTCHATS_EXCLUDE_PROJECTS": "not json"},
    {"PASTCHATS_AGENT_ENV": "{}"},
    {"FASTEMBED_CACHE_PATH": "/models"},
    {"PASTCHATS_MODEL_CACHE": "/a", "FASTEMBED_CACHE_PATH": "/b", "MODEL_CACHE": "/c"},
    {"PASTCHATS_USER_HOME": "/home/someone"},
    {"PASTCHATS_UNKNOWN": "ignored", "PASTCHATS_HOME": "/srv/chats", "PASTCHATS_LOG_LEVEL": "DEBUG"},
]
FLAGS: list[dict[str, object]] = [
    {},
    {"home": Path("/from/flag")},
    {"model": "flag/model", "log_level": "DEBUG"},
    {"home": Path("/x"), "log_level": "INFO"},
]


@pytest.mark.parametrize(("environment", "flags"), list(itertools.product(ENVIRONMENTS, FLAGS)))
def test_the_reader_gives_what_settings_gives_or_declines(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], flags: dict[str, object]
) -> None:
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    quick = quick_settings(**flags)  # type: ignore[arg-type]  # the flags' own types, per key
    try:
        full = Settings(**flags)  # type: ignore[arg-type]
    except (ValidationError, SettingsError):  # refused: the full path says why
        assert quick is None
        return
    if quick is not None:
        assert {f: getattr(quick, f) for f in FIELDS} == {f: getattr(full, f) for f in FIELDS}
        assert quick.model_name() == full.model_name()


@pytest.mark.parametrize(
    "environment",
    [{}, {"PASTCHATS_HOME": "/srv/chats", "PASTCHATS_MODEL": "m", "PASTCHATS_SYNC": "false", "PASTCHATS_PORT": "9000"}],
)
def test_the_usual_environments_are_read_without_pydantic(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    assert quick_settings() is not None
    assert quick_settings(home=Path("/x"), model="m", log_level="DEBUG") is not None


@pytest.mark.parametrize(
    ("xdg", "home"),
    list(
        itertools.product([None, "", "relative/dir", "/xdg"], [None, "/home/someone", "/home/someone/", "", "rel", "/"])
    ),
)
def test_the_default_folders_are_platformdirs_own(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str | None
) -> None:
    for variable in ("XDG_DATA_HOME", "XDG_CACHE_HOME"):
        if xdg is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, xdg)
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert default_home() == Path(platformdirs.user_data_dir("pastchats", appauthor=False))
    assert default_model_cache() == Path(platformdirs.user_cache_dir("pastchats", appauthor=False)) / "models"
