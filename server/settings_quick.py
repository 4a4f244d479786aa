"""The settings the read-only commands and `serve`'s start need, read without pydantic (start-up speed
of `stats`, `recent`, and of `serve`'s first result: pydantic-settings' import and the `Settings`
build are ~0.1 s of CPU).

`server.settings.Settings` stays the one definition of every setting; this reader gives the same
values for the fields `stats`, `recent` and the opening of the store use, from the same sources with
the same precedence (command-line flags over `PASTCHATS_*` variables, matched case-insensitively,
over defaults). Where it could disagree with `Settings` (a list-valued variable, an empty or unusual
value, a value `Settings` would refuse, two spellings of one variable) it declines, and the caller
builds the full `Settings`, which reads or refuses the value as always. A test compares the two
field by field.

The defaults live here so that both readers share them.
"""

from __future__ import annotations

import os
import posixpath
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pathlib is imported where a Path is built: the lean `stats` does without it
    from pathlib import Path

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_OUTPUT_BUDGET = 12_000
# Every `Settings` field and the environment variables it is read from (lower case); a test checks
# this against `Settings` itself.
VARIABLES: dict[str, tuple[str, ...]] = {
    name: (f"pastchats_{name}",)
    for name in (
        "home",
        "model",
        "output_budget_chars",
        "http_token",
        "host",
        "port",
        "log_level",
        "log_file",
        "sync",
        "sync_interval",
        "sync_paths",
        "user_home",
        "agent_env",
        "exclude_projects",
        "exclude_paths",
        "exclude_sources",
    )
} | {"model_cache": ("pastchats_model_cache", "fastembed_cache_path", "model_cache")}
_PATHS = frozenset({"home", "model_cache", "log_file", "user_home"})
_TEXTS = frozenset({"model", "http_token", "host"})
_INTS = {"output_budget_chars": (1_000, 200_000), "port": (1, 65_535), "sync_interval": (0, None)}
_BOOLS = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})


def _xdg_base(variable: str, fallback: str) -> str | None:
    """What platformdirs (4.x) takes as the base of a user directory on Linux, in the common cases
    (an absolute `$XDG_...` or `$HOME`); None in the others, which are left to platformdirs itself."""
    path = os.environ.get(variable, "")
    if posixpath.isabs(path):
        return path
    home = os.environ.get("HOME")
    if home is None or not posixpath.isabs(home):
        return None
    return posixpath.expanduser(fallback)


def _user_dir(kind: str) -> str:
    base = None
    if sys.platform == "linux":
        base = (
            _xdg_base("XDG_DATA_HOME", "~/.local/share") if kind == "data" else _xdg_base("XDG_CACHE_HOME", "~/.cache")
        )
    if base is not None:
        return posixpath.join(base, "pastchats")
    import platformdirs  # deferred: ~0.07 s of start-up, needed only off the common Linux case

    found = platformdirs.user_data_dir if kind == "data" else platformdirs.user_cache_dir
    return str(found("pastchats", appauthor=False))


def default_home() -> Path:
    from pathlib import Path

    return Path(_user_dir("data"))


def default_model_cache() -> Path:
    """pastchats' own model cache: every process finds it, whatever environment a client gives it."""
    from pathlib import Path

    return Path(_user_dir("cache")) / "models"


def derived_models_dir() -> Path:
    """Where pastchats keeps files it derives from installed models (the int8 copy for documents):
    its own cache, whatever folder the models themselves are read from (which may be shared)."""
    return default_model_cache() / "derived"


def path_text(value: str) -> str | None:
    """`str(Path(value).expanduser())` on POSIX, without pathlib (None where it would raise): the
    store's path as `stats` prints it."""
    if sys.platform == "win32":
        return None

    def parsed(text: str) -> str:
        root = "//" if text.startswith("//") and not text.startswith("///") else "/" if text.startswith("/") else ""
        return root + "/".join(part for part in text.split("/") if part not in ("", ".")) or "."

    text = parsed(value)
    if text.startswith("~"):
        first, _, rest = text.partition("/")
        expanded = posixpath.expanduser(first)
        if expanded.startswith("~"):
            return None  # pathlib: "Could not determine home directory"
        text = parsed(expanded + "/" + rest)
    return text


def resolve_model(model: str | None, home: Path) -> str:
    """The model to use: the setting, else the one the store was embedded with, else the default."""
    from storage.defaults import DEFAULT_MODEL
    from storage.store_meta import store_model  # not storage.model_files: that pulls in NumPy

    return model or store_model(home) or DEFAULT_MODEL


class QuickValues:
    """The same fields as text (paths as given: `Path(home)` is the setting; `model_cache` None: the default)."""

    def __init__(
        self,
        home: str,
        model: str | None,
        output_budget_chars: int,
        log_level: str,
        log_file: str | None,
        model_cache: str | None = None,
    ):
        self.home = home
        self.model = model
        self.output_budget_chars = output_budget_chars
        self.log_level = log_level
        self.log_file = log_file
        self.model_cache = model_cache


class QuickSettings:
    """The fields of `Settings` that `stats`, `recent` and `serve`'s warm-up read, with the same values."""

    def __init__(
        self,
        home: Path,
        model: str | None,
        output_budget_chars: int,
        log_level: str,
        log_file: Path | None,
        model_cache: Path,
    ):
        self.home = home
        self.model = model
        self.output_budget_chars = output_budget_chars
        self.log_level = log_level
        self.log_file = log_file
        self.model_cache = model_cache

    def model_name(self) -> str:
        return resolve_model(self.model, self.home)


def _environment() -> dict[str, str] | None:
    """The variables `Settings` reads, by lower-case name; None when one is given in two spellings."""
    wanted = {name for names in VARIABLES.values() for name in names}
    found: dict[str, str] = {}
    for key, value in os.environ.items():
        lower = key.lower()
        if lower in wanted:
            if lower in found:
                return None
            found[lower] = value
    return found


def _plain(field: str, value: str) -> bool:
    """Whether `Settings` reads `value` for `field` as this reader does (and accepts it)."""
    if not value or value != value.strip():
        return False
    if field in _PATHS or field in _TEXTS:
        return True
    if field in _INTS:
        low, high = _INTS[field]
        if not (value.isascii() and value.isdigit()) or (len(value) > 1 and value[0] == "0"):
            return False
        number = int(value)
        return number >= low and (high is None or number <= high)
    if field == "log_level":
        return value in LOG_LEVELS
    if field == "sync":
        return value.lower() in _BOOLS
    return False  # lists and mappings: JSON, left to Settings


def quick_values(home: str | None = None, model: str | None = None, log_level: str | None = None) -> QuickValues | None:
    """The settings from these flags (None: not given) and the environment, or None when only the
    full `Settings` can say (see the module's docstring)."""
    environment = _environment()
    if environment is None:
        return None
    values: dict[str, str] = {}
    for field, names in VARIABLES.items():
        given = next((environment[name] for name in names if name in environment), None)
        if given is None:
            continue
        if not _plain(field, given):
            return None
        values[field] = given
    if log_level is not None:
        values["log_level"] = log_level
    budget = values.get("output_budget_chars")
    return QuickValues(
        home=home if home is not None else values["home"] if "home" in values else _user_dir("data"),
        model=model if model is not None else values.get("model"),
        output_budget_chars=int(budget) if budget is not None else DEFAULT_OUTPUT_BUDGET,
        log_level=values.get("log_level", "WARNING"),
        log_file=values.get("log_file"),
        model_cache=values.get("model_cache"),
    )


def quick_settings(
    home: Path | None = None, model: str | None = None, log_level: str | None = None
) -> QuickSettings | None:
    """`quick_values` with paths as `Settings` holds them."""
    from pathlib import Path

    values = quick_values(None if home is None else str(home), model, log_level)
    if values is None:
        return None
    return QuickSettings(
        home=home if home is not None else Path(values.home),
        model=values.model,
        output_budget_chars=values.output_budget_chars,
        log_level=values.log_level,
        log_file=Path(values.log_file) if values.log_file is not None else None,
        model_cache=Path(values.model_cache) if values.model_cache is not None else default_model_cache(),
    )


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, the width click wraps help to, without importing shutil:
    read here because this module and `server.settings` are the only readers of the environment."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]  # None: caught
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def process_environment(names: tuple[str, ...]) -> dict[str, str]:
    """Those of `names` set here: the environment a helper process is given (the quick `delete`'s
    finisher, `server.cli_delete`), read here as the only readers of the environment do."""
    return {name: os.environ[name] for name in names if name in os.environ}
