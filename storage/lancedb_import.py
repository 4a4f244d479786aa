"""`import lancedb`, without paying for the REST client a local store never uses.

lancedb 0.40 imports `lance_namespace`, which re-exports ~110 pydantic models of a generated OpenAPI
client (`lance_namespace_urllib3_client`), whose package `__init__` also imports every API class
(~140 `@validate_call` methods each): over half of `import lancedb` (2-4 s here, of 4-7 s), for
remote catalogs and namespaces that a store on disk never touches.

While lancedb is imported, an import hook defers exactly that client:
- the client's top package is created without running its `__init__`; its first missing attribute
  (e.g. `ApiClient`) runs the real `__init__`, which then imports everything as usual;
- its `models` package hands out a stand-in per model class; a stand-in's first real use (a call,
  an attribute, `isinstance`, subclassing) imports that one model module and from then on is the real
  class (the stand-in is also replaced by it wherever a lance* module bound it by name).
Submodules (`...models.list_tables_response`, `...api.table_api`) import normally at any time.

The hook is used only when both `__init__` files look as expected (nothing but docstrings, a version
string and imports of their own submodules, checked on their syntax tree); and if importing lancedb
under it fails for any reason, the partly imported modules are dropped and lancedb is imported the
normal way. So a lancedb release that changes these internals is slower to import, never broken.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

CLIENT = "lance_namespace_urllib3_client"
MODELS = f"{CLIENT}.models"
# Dropped after a failed deferred import, so the normal import starts clean. `lancedb._lancedb` (the
# compiled core) stays: it can be initialised only once per process and holds no deferred names.
_PARTIAL = ("lancedb", "lance_namespace", CLIENT)


def import_lancedb() -> ModuleType:
    """The `lancedb` module, imported with the REST client deferred where that is known to be safe."""
    os.environ.setdefault("LANCEDB_LOG", "error")  # its Rust side logs warnings to stderr otherwise
    if "lancedb" in sys.modules:
        return sys.modules["lancedb"]
    plan = deferral_plan()
    if plan is None:
        return importlib.import_module("lancedb")
    return import_deferred(plan)


def import_deferred(plan: dict[str, str]) -> ModuleType:
    """Import lancedb with the client deferred; on any failure, fall back to the normal import."""
    finder = _Deferral(plan)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module("lancedb")
    except Exception:
        log.debug("deferred import of lancedb failed; importing it in full", exc_info=True)
        for name in [n for n in sys.modules if n.split(".")[0] in _PARTIAL and n != "lancedb._lancedb"]:
            del sys.modules[name]
        sys.meta_path.remove(finder)
        return importlib.import_module("lancedb")
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)


def deferral_plan() -> dict[str, str] | None:
    """Model class name -> its module, when the client's package files have the expected shape."""
    spec = importlib.machinery.PathFinder.find_spec(CLIENT)
    if spec is None or not spec.submodule_search_locations or "lancedb" in sys.modules:
        return None
    if CLIENT in sys.modules or "lance_namespace" in sys.modules:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    if read_plan(root / "__init__.py", CLIENT, allow_version=True) is None:
        return None
    return read_plan(root / "models" / "__init__.py", MODELS, allow_version=False)


def read_plan(init: Path, package: str, *, allow_version: bool, client: str = CLIENT) -> dict[str, str] | None:
    """`{name: module}` for `from <package>.<sub> import <name>` lines, or None when the file holds
    anything else that running it would do (then skipping it would not be safe)."""
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    plan: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring
        if allow_version and isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__version__"]:
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith(f"{client}."):
            return None
        for alias in node.names:
            if alias.name == "*":
                return None
            if (node.module or "").startswith(f"{package}."):
                plan[alias.asname or alias.name] = str(node.module)
    return plan or None


class _Deferral(importlib.abc.MetaPathFinder):
    """Finds the client's top package and its `models` package, and loads them deferred."""

    def __init__(self, models: dict[str, str]):
        self.models = models

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in (CLIENT, MODELS):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _DeferredPackage(spec.loader, self.models if fullname == MODELS else None)
        return spec


class _DeferredPackage(importlib.abc.Loader):
    """A package whose `__init__` runs on its first missing attribute (or, for `models`, whose
    classes are handed out as stand-ins until used)."""

    def __init__(self, real: importlib.abc.Loader, models: dict[str, str] | None):
        self.real = real
        self.models = models

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object, with `__path__` set: submodules import normally

    def exec_module(self, module: ModuleType) -> None:
        real, models = self.real, self.models

        def run_real_init() -> None:
            del module.__dict__["__getattr__"]  # the real names from now on
            real.exec_module(module)

        def deferred_getattr(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            if models is not None and name in models:
                stand_in = Deferred(name, models[name])
                setattr(module, name, stand_in)
                return stand_in
            run_real_init()
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__getattr__ = deferred_getattr  # type: ignore[method-assign]  # PEP 562 module hook
        if models is not None:
            module.__all__ = sorted(models)  # type: ignore[attr-defined]  # set on a plain module object


class Deferred:
    """Stands for one model class of the REST client until it is really used; then it is that class."""

    __slots__ = ("_module", "_name", "_real")

    def __init__(self, name: str, module: str):
        self._name = name
        self._module = module
        self._real: Any = None

    def load(self) -> Any:
        real = object.__getattribute__(self, "_real")
        if real is None:
            name, module = object.__getattribute__(self, "_name"), object.__getattribute__(self, "_module")
            real = getattr(importlib.import_module(module), name)
            self._real = real
            _rebind(self, real)
        return real

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.load(), attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self.load())

    def __subclasscheck__(self, subclass: type) -> bool:
        return issubclass(subclass, self.load())

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        return (self.load(),)

    def __eq__(self, other: object) -> bool:
        return bool(self.load() == (other.load() if isinstance(other, Deferred) else other))

    def __hash__(self) -> int:
        return hash(self.load())

    def __or__(self, other: Any) -> Any:
        return self.load() | other

    def __ror__(self, other: Any) -> Any:
        return other | self.load()

    def __repr__(self) -> str:
        real = object.__getattribute__(self, "_real")
        return repr(real) if real is not None else f"<deferred {self._module}.{self._name}>"


def _rebind(stand_in: Deferred, real: Any) -> None:
    """Where a lance* module bound the stand-in by name, bind the real class: identity checks then hold."""
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("lance"):
            continue
        namespace = getattr(module, "__dict__", {})
        for key, value in list(namespace.items()):
            if value is stand_in:
                namespace[key] = real
