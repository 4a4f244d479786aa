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


def test_install_json_is_quiet_and_says_what_it_did(empty: dict[str, str], model_cache_dir: Path) -> None:
    """A first install after a keyword-only import: search becomes hybrid, not "hybrid again"."""
    imported = CliRunner(env=empty).invoke(cli, ["import", "--sample", "--quiet"])
    assert imported.exit_code == 0, imported.output
    assert imported.stderr == ""
    said = run(empty, "install", "--from", str(model_cache_dir))
    assert said.exit_code == 0, said.output
    assert "search is hybrid now" in said.stdout
    assert "again" not in said.stdout
    again = run(empty, "install", "--json")
    assert again.exit_code == 0, again.output
    assert again.stderr == ""
    result = json.loads(again.stdout)
    assert result["model"] == MODEL
    assert (result["already_installed"], result["dim"], result["embedded"]) == (True, 384, 0)


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


def test_a_failed_download_names_the_host_it_could_not_reach_and_the_offline_route(
    empty: dict[str, str], tmp_path: Path
) -> None:
    """The model hub unreachable (here: a port nothing listens on, as the hub's address): the error names
    that host and why, and the copy-it-over route, without -v."""
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:  # a free port, closed again: connecting to it is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, **empty, "HOME": str(tmp_path), "HF_ENDPOINT": f"http://127.0.0.1:{port}"}
    for name in ("FASTEMBED_CACHE_PATH", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "server.cli", "model", "install", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"could not download {MODEL}: 127.0.0.1 could not be reached: Connection refused." in line
    assert f"pastchats model install {MODEL} --from DIR" in line
