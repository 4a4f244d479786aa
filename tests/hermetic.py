"""Tests never touch the user's own home: every test, and every process a test starts, runs with a home
of the test session (HOME, the XDG folders, Windows' folders and every agent's own location variable
point into it), and a guard in the test process fails the run when anything still reads or writes the
real home.

The guard is an audit hook (`sys.addaudithook`): it sees every file opened, folder listed, folder made,
file removed or renamed and SQLite database connected to, in every thread of the test process, and
refuses (PermissionError) any under the real home, except the places a test run must read there: this
repository, the Python installation and the packages on `sys.path`, uv's cache and the model cache.
Processes a test starts are kept out by their environment (they inherit the session's home); CI
proves it with a home full of agent logs holding a canary word (`.ci/canary_home.py`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from importers.registry import AGENT_VARIABLES

__all__ = ["HomeGuard", "hermetic_environment"]

# The system's own folders, whatever the system: under the session's home, as their defaults are.
SYSTEM_FOLDERS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "APPDATA": "AppData/Roaming",
    "LOCALAPPDATA": "AppData/Local",
}
# What the guard watches: a path is the event's first argument (both of a rename's and a copy's).
_EVENTS = {
    "open": 1,
    "os.listdir": 1,
    "os.scandir": 1,
    "os.mkdir": 1,
    "os.remove": 1,
    "os.rmdir": 1,
    "os.rename": 2,
    "os.chmod": 1,
    "shutil.copyfile": 2,
    "shutil.copytree": 2,
    "sqlite3.connect": 1,
}


def hermetic_environment(home: Path, user_cache: Path) -> dict[str, str]:
    """The variables every test and every process it starts sees: the user's folders in `home`, each
    agent's own location variable (as the importers declare them) in `home/agents`, pastchats' and
    uv's caches, and no background sync."""
    env = {"HOME": str(home), "USERPROFILE": str(home), "XDG_CACHE_HOME": str(user_cache)}
    env |= {name: str(home / below) for name, below in SYSTEM_FOLDERS.items()}
    env |= {name: str(home / "agents" / name) for name in AGENT_VARIABLES if name not in env}
    # uv finds its own cache by XDG_CACHE_HOME too: tests that install offline keep the machine's.
    env["UV_CACHE_DIR"] = os.environ.get("UV_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
    )
    env["PASTCHATS_SYNC"] = "false"  # servers built in tests never sync; tests that sync opt in
    return env


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def _covers(folder: str, paths: set[str]) -> bool:
    """Whether `folder` holds any of `paths` (allowing it would allow them)."""
    return any(path.startswith(folder.rstrip(os.sep) + os.sep) for path in paths)


@dataclass
class HomeGuard:
    """Refuses and records every touch of the real home's files, once `start`ed."""

    guarded: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    active: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of_this_machine(cls, repository: Path) -> HomeGuard:
        """The real home (and the user folders set outside it), captured before any test changes them."""
        home = Path.home()
        guarded = {home, home.resolve()}
        for name in (*SYSTEM_FOLDERS, "USERPROFILE", *AGENT_VARIABLES):
            if os.environ.get(name):
                guarded.add(Path(os.environ[name]))
        cache = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
        allowed = {
            repository,
            Path(sys.prefix),
            Path(sys.base_prefix),
            Path(sys.exec_prefix),
            Path(tempfile.gettempdir()),
            Path(os.environ.get("UV_CACHE_DIR") or Path(cache) / "uv"),
            *(Path(entry) for entry in sys.path if entry),
        }
        if os.environ.get("FASTEMBED_CACHE_PATH"):
            allowed.add(Path(os.environ["FASTEMBED_CACHE_PATH"]))
        allowed |= {path.resolve() for path in allowed}
        roots = {_absolute(str(path)) for path in guarded}
        # A `sys.path` entry that is the home itself (a run started there) would allow all of it.
        inside = {_absolute(str(path)) for path in allowed} - roots
        return cls(guarded=sorted(roots), allowed=sorted(path for path in inside if not _covers(path, roots)))

    def start(self) -> None:
        self.active = True
        sys.addaudithook(self._hook)  # hooks cannot be removed: `stop` makes it do nothing

    def stop(self) -> None:
        self.active = False

    def allow(self, path: Path) -> None:
        self.allowed.append(_absolute(str(path)))

    def touched_since(self, start: int) -> list[str]:
        with self._lock:
            return self.touched[start:]

    def _inside(self, path: str, roots: list[str]) -> bool:
        return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if not self.active or event not in _EVENTS:
            return
        for value in args[: _EVENTS[event]]:
            if isinstance(value, bytes):
                value = os.fsdecode(value)
            if not isinstance(value, (str, os.PathLike)):
                continue  # a file descriptor, or None for the current folder
            path = _absolute(os.fsdecode(os.fspath(value)))
            if self._inside(path, self.guarded) and not self._inside(path, self.allowed):
                where = "".join(traceback.format_stack(limit=8)[:-2])
                with self._lock:
                    self.touched.append(f"{event} {path}\n{where}")
                raise PermissionError(f"a test touched the real home: {event} {path}")
