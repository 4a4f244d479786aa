"""`pastchats model`: status, the catalogue, installing (also from a folder, offline), switching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from server.cli import cli

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner(env=env).invoke(cli, ["model", *args])


@pytest.fixture
def empty(tmp_path: Path) -> dict[str, str]:
    """A new user's machine: a store folder and an empty models folder."""
    return {"PASTCHATS_HOME": str(tmp_path / "store"), "PASTCHATS_MODEL_CACHE": str(tmp_path / "models")}


def snapshot_of(cache: Path) -> Path:
    return next(cache.glob("models--Qdrant--all-MiniLM-L6-v2-onnx/snapshots/*"))


def test_status_says_the_model_is_not_installed_and_how_to_install_it(empty: dict[str, str]) -> None:
    """A problem is a non-zero exit, as `doctor`'s; the fix names the offline way too."""
    result = run(empty, "status")
    assert result.exit_code == 1, result.output
    assert f"Model: {MODEL}: not installed" in result.stdout
    assert f"Fix: pastchats model install {MODEL}  (offline: " in result.stdout
    assert f"pastchats model install {MODEL} --from DIR)" in result.stdout
    assert run(empty, "status", "--json").exit_code == 1


def test_the_catalogue_lists_sizes_and_what_is_installed(model_cache_dir: Path, tmp_path: Path) -> None:
    result = run({"PASTCHATS_HOME": str(tmp_path), "PASTCHATS_MODEL_CACHE": str(model_cache_dir)}, "list", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows[MODEL]["installed"] is True
    assert rows[MODEL]["current"] is True
    assert rows[MODEL]["dim"] == 384
    assert rows["BAAI/bge-small-en-v1.5"]["installed"] is False
    assert all(row["size_gb"] > 0 for row in rows.values())


@pytest.mark.parametrize("layout", ["a fastembed cache", "the model's own folder"])
def test_install_from_a_folder_copies_checks_and_is_idempotent(
    empty: dict[str, str], model_cache_dir: Path, layout: str
) -> None:
    source = model_cache_dir if layout == "a fastembed cache" else snapshot_of(model_cache_dir)
    first = run(empty, "install", "--from", str(source))
    assert first.exit_code == 0, first.output
    assert "it loads and embeds (384 dimensions)" in first.stdout
    second = run(empty, "install")
    assert second.exit_code == 0, second.output
    assert "already installed" in second.stdout
    status = run(empty, "status", "--json")
    assert json.loads(status.stdout)["loads"] is True


def test_install_from_a_folder_without_the_model_says_what_it_expected(empty: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    result = run(empty, "install", "--from", str(tmp_path / "junk"))
    assert result.exit_code == 1
    assert "holds no copy of sentence-transformers/all-MiniLM-L6-v2" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["install", "minilm-typo"], ["use", "minilm-typo"]])
def test_an_unknown_model_name_exits_non_zero_with_a_clear_message(empty: dict[str, str], command: list[str]) -> None:
    result = run(empty, *command)
    assert result.exit_code == 1
    assert "unknown embedding model 'minilm-typo'" in result.output


def test_using_the_model_the_store_already_uses_changes_nothing(model_cache_dir: Path, tmp_path: Path) -> None:
    env = {"PASTCHATS_HOME": str(tmp_path / "store"), "PASTCHATS_MODEL_CACHE": str(model_cache_dir)}
    imported = CliRunner(env=env).invoke(cli, ["import", "--sample"])
    assert imported.exit_code == 0, imported.output
    result = run(env, "use", MODEL)
    assert result.exit_code == 0, result.output
    assert f"already uses {MODEL}" in result.stdout
