"""Build the one-click bundle for Claude Desktop: `python3 packaging/build_mcpb.py [OUT.mcpb]`.

The bundle holds the manifest (`packaging/mcpb/manifest.json`, a `uv` server: the client installs
Python and the locked dependencies itself), the entry point, and the project as `uv` builds it
(pyproject.toml, uv.lock, README.md and the four packages). The official bundle tool validates the
manifest and packs it: `npm ci --prefix tests/integration` installs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MCPB = ROOT / "tests" / "integration" / "node_modules" / ".bin" / "mcpb"
PROJECT_FILES = ("pyproject.toml", "uv.lock", "README.md")
PACKAGES = ("server", "tools", "storage", "importers")


def stage(into: Path) -> Path:
    """The bundle's folder: manifest and entry point, and the project without caches."""
    for name in ("manifest.json", "serve.py"):
        shutil.copy2(ROOT / "packaging" / "mcpb" / name, into / name)
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, into / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return into


def build(out: Path, mcpb: Path = MCPB) -> Path:
    if not mcpb.exists():
        raise SystemExit(f"the bundle tool is missing: run `npm ci --prefix {MCPB.parent.parent.parent}` first")
    with tempfile.TemporaryDirectory() as scratch:
        folder = stage(Path(scratch))
        subprocess.run([str(mcpb), "validate", str(folder / "manifest.json")], check=True)
        subprocess.run([str(mcpb), "pack", str(folder), str(out.resolve())], check=True)
    return out


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "pastchats.mcpb")
