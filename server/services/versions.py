"""The versions pastchats was tested with, and whether this installation runs them.

`server/constraints.txt` is uv.lock exported as pip constraints (a test keeps the two equal).
The README's install command passes it to the installer, so a user runs the versions every test ran;
`pastchats doctor` names any package whose installed version differs (an install that skipped the
constraints, a later `pip install` into the same environment).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

CONSTRAINTS = Path(__file__).parent.parent / "constraints.txt"


@dataclass(frozen=True)
class Drift:
    package: str
    installed: str
    tested: list[str]


def locked_versions(text: str | None = None) -> dict[str, list[str]]:
    """Each locked package and its versions (a package can have one per Python version, by marker)."""
    versions: dict[str, list[str]] = {}
    for line in (CONSTRAINTS.read_text(encoding="utf-8") if text is None else text).splitlines():
        requirement = line.split(";", 1)[0].strip()
        if not requirement or requirement.startswith("#") or "==" not in requirement:
            continue
        name, version = (part.strip() for part in requirement.split("==", 1))
        versions.setdefault(canonical(name), []).append(version)
    return versions


def canonical(name: str) -> str:
    """A distribution name as the index compares them (PEP 503): case, `_` and `.` do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def drift() -> list[Drift]:
    """Installed packages whose version is not the tested one; packages not installed (another system's,
    by marker) are not drift."""
    found = []
    for package, tested in sorted(locked_versions().items()):
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
        if installed not in tested:
            found.append(Drift(package, installed, tested))
    return found
