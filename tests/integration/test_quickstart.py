"""The README's quick start on a fresh machine: a new environment, a new HOME, no model anywhere.

The environment is a fresh virtual environment holding the project's own wheel, built from this
checkout (its console script, its packaged sample chats). Its dependencies are borrowed from the
project's environment through a path file rather than installed: installing lancedb, pyarrow and
onnxruntime from the registry takes minutes and needs the network, which CI and this test must not
depend on. Only the project's own packaging is under test here; the dependencies are the same versions
the lock file pins.

Every command runs with only HOME and PATH in its environment, as MCP clients start servers.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed")
    venv = tmp_path_factory.mktemp("venv") / "env"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([uv, "venv", "-q", "-p", python, str(venv)], check=True, timeout=120)
    install = [uv, "pip", "install", "-q", "--offline", "--no-deps", "--python", str(venv / "bin" / "python")]
    subprocess.run([*install, str(REPO)], check=True, timeout=300)
    packages = next(venv.glob("lib/python*/site-packages"))
    (packages / "borrowed_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    return venv


def clean_env(venv: Path, home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}


def pastchats(venv: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(venv / "bin" / "pastchats"), *args]
    return subprocess.run(command, env=clean_env(venv, home), capture_output=True, text=True, timeout=600, cwd=home)


async def test_the_quick_start_works_keyword_only_then_hybrid_once_the_model_is_installed_offline(
    fresh_venv: Path, tmp_path: Path, model_cache_dir: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()

    imported = pastchats(fresh_venv, home, "import", "--sample")
    assert imported.returncode == 0, imported.stderr
    assert "sample chats (plain):" in imported.stdout
    assert "await embeddings" in imported.stdout
    assert "Traceback" not in imported.stderr
    found = pastchats(fresh_venv, home, "search", "monstera leaves yellow", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["mode"] == "keyword"

    installed = pastchats(fresh_venv, home, "model", "install", "--from", str(model_cache_dir))
    assert installed.returncode == 0, installed.stderr
    assert "loads and embeds" in installed.stdout
    assert "awaited the model" in installed.stdout
    assert "embedding passages:" in installed.stderr  # progress: plain lines, stderr is not a terminal here
    assert any((home / ".cache" / "pastchats" / "models").glob("models--*/snapshots/*/model.onnx"))
    again = pastchats(fresh_venv, home, "model", "install", "--from", str(model_cache_dir))
    assert again.returncode == 0, again.stderr

    params = StdioServerParameters(
        command=str(fresh_venv / "bin" / "pastchats"), args=["serve"], env=clean_env(fresh_venv, home), cwd=home
    )
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("conversation_search", {"query": "my houseplant is dying, too much water?"})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["mode"] == "hybrid"
    assert result.structured_content["chats"][0]["uri"] == "sample-houseplants"


def test_an_unknown_model_name_fails_with_a_clear_message(fresh_venv: Path, tmp_path: Path) -> None:
    done = pastchats(fresh_venv, tmp_path, "model", "install", "all-minilm-l6")
    assert done.returncode == 1
    assert "unknown embedding model 'all-minilm-l6'" in done.stderr
    assert "sentence-transformers/all-MiniLM-L6-v2" in done.stderr
    assert "pastchats model list" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_installed_package_carries_the_pages_own_files(fresh_venv: Path, tmp_path: Path) -> None:
    """`pastchats ui` works offline: its stylesheet, script and icon are inside the wheel."""
    read = "from importlib.resources import files; s = files('server.ui') / 'static'; " + (
        "print(sorted(p.name for p in s.iterdir()))"
    )
    done = subprocess.run(
        [str(fresh_venv / "bin" / "python"), "-c", read],
        env=clean_env(fresh_venv, tmp_path),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['icon.svg', 'ui.css', 'ui.js']"
    assert "--no-browser" in pastchats(fresh_venv, tmp_path, "ui", "--help").stdout
