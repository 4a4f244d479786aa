"""The one-click bundle (`.mcpb`) and the MCP registry entry (`server.json`): built with the official
bundle tool, named like the package and the command, and the bundle serves from what it holds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
MCPB = ROOT / "tests" / "integration" / "node_modules" / ".bin" / "mcpb"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

needs_mcpb = pytest.mark.skipif(
    not MCPB.exists(), reason="the bundle tool is not installed: run `npm ci --prefix tests/integration` (CI does)"
)


def test_the_package_is_named_like_its_command() -> None:
    """`uv tool install/upgrade/uninstall pastchats` all name the one thing the user typed."""
    assert PROJECT["name"] == "pastchats"
    assert list(PROJECT["scripts"]) == ["pastchats"]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    assert any(p["name"] == "pastchats" and p["source"] == {"editable": "."} for p in lock["package"])


def test_the_install_constraints_are_the_lock() -> None:
    """The README installs with server/constraints.txt: it must hold exactly uv.lock's versions, the ones
    every test runs (its first lines name the command that regenerates it)."""
    command = (ROOT / "server" / "constraints.txt").read_text().splitlines()[1].lstrip("# ").split()
    exported = subprocess.run(
        [*command[:-2], "--quiet", "--no-header"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    ours = [line for line in (ROOT / "server" / "constraints.txt").read_text().splitlines() if not line.startswith("#")]
    assert ours == exported.splitlines()
    lock = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"] if "version" in p}
    assert "lancedb==" + lock["lancedb"] in ours
    assert "onnxruntime==" + lock["onnxruntime"] in ours


def test_doctor_reads_the_locked_versions_and_finds_none_drifted_here() -> None:
    """This environment is `uv sync --frozen`'s, so nothing differs from the lock; a version that differs
    is named with the one tested."""
    from server.services.versions import drift, locked_versions

    assert locked_versions()["lancedb"]
    assert locked_versions()["pydantic-core"]
    assert drift() == []
    assert locked_versions("Foo_Bar==1.0 ; sys_platform == 'win32'\nnumpy==1 ; x\nnumpy==2 ; y\n") == {
        "foo-bar": ["1.0"],
        "numpy": ["1", "2"],
    }


def test_the_registry_entry_names_the_package_the_bundle_and_the_readme_name() -> None:
    entry = json.loads((ROOT / "server.json").read_text())
    manifest = json.loads((ROOT / "packaging" / "mcpb" / "manifest.json").read_text())
    # The registry's own rules for these fields (its newest dated schema, 2025-12-11).
    assert entry["$schema"] == "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
    assert entry["repository"] == {"url": "https://github.com/pastchats/pastchats", "source": "github"}
    assert f"io.github.{entry['repository']['url'].split('/')[3]}/" in entry["name"]  # the namespace GitHub proves
    assert len(entry["description"]) <= 100
    jsonschema.validate(entry["name"], {"type": "string", "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$"})
    (package,) = entry["packages"]
    assert (package["registryType"], package["identifier"]) == ("pypi", PROJECT["name"])
    assert package["transport"] == {"type": "stdio"}
    assert [a["value"] for a in package["packageArguments"]] == ["serve"]
    assert entry["version"] == package["version"] == manifest["version"] == PROJECT["version"]
    # PyPI packages prove which registry name they belong to in their description, the README.
    assert f"mcp-name: {entry['name']}" in (ROOT / "README.md").read_text()
    settings = {v["name"] for v in package["environmentVariables"]}
    assert settings == set(manifest["server"]["mcp_config"]["env"]) == {"PASTCHATS_HOME", "PASTCHATS_MODEL"}


@needs_mcpb
@pytest.mark.integration
def test_the_bundle_builds_validates_and_serves_offline(tmp_path: Path) -> None:
    bundle = tmp_path / "pastchats.mcpb"
    built = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build_mcpb.py"), str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert "Manifest schema validation passes" in built.stdout
    info = subprocess.run([str(MCPB), "info", str(bundle)], capture_output=True, text=True, timeout=60, check=False)
    assert info.returncode == 0, info.stderr

    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
    assert {"manifest.json", "serve.py", "pyproject.toml", "uv.lock", "README.md"} <= names
    assert "importers/sample/sample_chats.jsonl" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", ".venv/"))]
    assert manifest["manifest_version"] == "0.4"
    assert manifest["server"]["type"] == "uv"
    assert set(manifest["user_config"]) == {"home", "model"}
    assert manifest["user_config"]["home"]["type"] == "directory"

    # The client runs the manifest's command in the unpacked bundle; offline, uv finds the locked
    # dependencies in its cache. A setting left blank is the default, so the store goes to $HOME's.
    unpacked = tmp_path / "unpacked"
    subprocess.run([str(MCPB), "unpack", str(bundle), str(unpacked)], capture_output=True, timeout=60, check=True)
    config = manifest["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(unpacked)) for a in config["args"]]
    store = tmp_path / "store"
    env = {**os.environ, "PASTCHATS_HOME": str(store), "PASTCHATS_MODEL": "", "UV_OFFLINE": "1"}
    env.pop("VIRTUAL_ENV", None)
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    ran = subprocess.run(
        [config["command"], *args],
        input=json.dumps(hello) + "\n",
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    answer = json.loads(ran.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "pastchats", ran.stderr
    assert answer["result"]["serverInfo"]["version"] == PROJECT["version"]


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_the_wheel_and_the_sdist_build_install_the_tested_versions_and_run(tmp_path: Path) -> None:
    """What would be published: `uv build` makes both; the wheel (built from the sdist, as uv does)
    installs into a fresh environment, from uv's cache, with the tested versions, and runs from a new
    home."""
    uv = shutil.which("uv") or "uv"

    def ok(*args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    ok(uv, "build", "--quiet", "--out-dir", str(tmp_path / "dist"), str(ROOT))
    (wheel,) = (tmp_path / "dist").glob("pastchats-*.whl")
    (sdist,) = (tmp_path / "dist").glob("pastchats-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        assert {"server/constraints.txt", "importers/sample/sample_chats.jsonl"} <= set(archive.namelist())
    assert sdist.stat().st_size < 5_000_000  # the sources, not a cache or a store
    venv = tmp_path / "venv"
    ok(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    # The tested versions, from uv's cache by the lock's own addresses (offline, no index to ask), then
    # the wheel itself, and a check that what it requires is what is installed.
    locked = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)}
    ok(
        uv,
        "sync",
        "--quiet",
        "--offline",
        "--frozen",
        "--no-dev",
        "--no-install-project",
        "--project",
        str(ROOT),
        env=locked,
    )
    ok(uv, "pip", "install", "--quiet", "--offline", "--no-deps", "--python", str(venv), str(wheel))
    ok(uv, "pip", "check", "--python", str(venv))

    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.defpath, "LANG": "C.UTF-8"}
    command = str(venv / "bin" / "pastchats")
    assert "A local, searchable memory" in ok(command, "--help", env=env)
    assert "8 new" in ok(command, "import", "--sample", "-q", env=env)
    assert (
        "versions: every dependency is the version pastchats was tested with"
        in subprocess.run(
            [command, "doctor", "--cli"], capture_output=True, text=True, timeout=300, check=False, env=env
        ).stdout
    )
