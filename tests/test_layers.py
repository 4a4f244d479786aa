"""The import graph of our four packages, read from their source (every `import`, at any depth).

Layers (docs/ARCHITECTURE.md): `server → tools → storage` and `server → importers → storage`.
Nothing imports `server`, `storage` imports nothing of ours above it, and no module reaches back to
one that (directly or not) imports it. Imports under `if TYPE_CHECKING:` count too: a layer that
needs another's types depends on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGES = ("server", "tools", "storage", "importers")
# What each package may import of ours (besides itself).
ALLOWED: dict[str, set[str]] = {
    "server": {"tools", "storage", "importers"},
    "tools": {"storage"},
    "importers": {"storage"},
    "storage": set(),
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))}


def imported_names(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """Every name an import statement anywhere in the file pulls in, made absolute, with its line."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno  # a submodule if one exists, else a name in `base`


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """module → {our module it imports: line}. `from a import b` means module `a.b` when that exists."""
    modules = source_modules(root)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for name, line in imported_names(path, module):
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def layer_violations(graph: dict[str, dict[str, int]]) -> list[str]:
    found = []
    for module, edges in graph.items():
        layer = module.split(".")[0]
        for target, line in edges.items():
            other = target.split(".")[0]
            if other != layer and other not in ALLOWED[layer]:
                found.append(f"{module}:{line} imports {target} ({layer} must not import {other})")
    return sorted(found)


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph(REPO_ROOT)


def test_each_package_imports_only_the_layers_below_it(graph: dict[str, dict[str, int]]) -> None:
    assert layer_violations(graph) == []


def test_no_module_outside_server_imports_server(graph: dict[str, dict[str, int]]) -> None:
    outside = [f"{m} imports {t}" for m, edges in graph.items() for t in edges if t.startswith("server")]
    assert [line for line in outside if not line.startswith("server")] == []


def test_no_two_modules_import_each_other_directly_or_through_others(graph: dict[str, dict[str, int]]) -> None:
    assert cycles(graph) == []


def test_the_checks_catch_an_upward_import_a_server_import_and_a_cycle(tmp_path: Path) -> None:
    """The walk sees imports inside functions, relative imports and `from package import module`."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "storage" / "store.py").write_text("def f():\n    from importers import parser\n")
    (tmp_path / "importers" / "parser.py").write_text("from . import helper\n")
    (tmp_path / "importers" / "helper.py").write_text("import importers.parser\nfrom server.app import x\n")
    (tmp_path / "server" / "app.py").write_text("x = 1\n")
    graph = import_graph(tmp_path)
    assert layer_violations(graph) == [
        "importers.helper:2 imports server.app (importers must not import server)",
        "storage.store:2 imports importers.parser (storage must not import importers)",
    ]
    assert cycles(graph) == [["importers.helper", "importers.parser"]]


def parsed_modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for module, path in source_modules(root).items():
        yield module, ast.parse(path.read_text(encoding="utf-8"), str(path))


TABLES = {"conversations", "messages", "chunks"}


def test_only_the_lance_store_touches_its_tables() -> None:
    """`Library` is the facade and `LanceStore` owns the tables: nobody else holds a raw table handle."""
    reaching = [
        f"{module}:{node.lineno} uses store.{node.attr}"
        for module, tree in parsed_modules(REPO_ROOT)
        if module != "storage.stores.lance_store"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in TABLES
        and (
            (isinstance(node.value, ast.Attribute) and node.value.attr == "store")
            or (isinstance(node.value, ast.Name) and node.value.id == "store")
        )
    ]
    assert reaching == []


def test_every_exception_of_ours_descends_from_pastchats_error() -> None:
    """One root, so each surface (tools, CLI) translates expected failures in one place."""
    straight = [
        f"{module}:{node.lineno} {node.name}"
        for module, tree in parsed_modules(REPO_ROOT)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id in {"Exception", "BaseException"} for base in node.bases)
        and node.name != "PastchatsError"
    ]
    assert straight == []


def test_no_module_outside_the_cli_imports_click() -> None:
    """The CLI speaks to people through click; the services it shares with the MCP server and the page
    raise our errors and return values, which each face words its own way."""
    found = [
        f"{module}:{line} imports {name}"
        for module, path in source_modules(REPO_ROOT).items()
        if not module.startswith("server.cli")
        for name, line in imported_names(path, module)
        if name == "click" or name.startswith("click.")
    ]
    assert found == []


FACES = ("server.cli", "server.ui", "server.app")


def test_the_shared_services_import_none_of_the_faces(graph: dict[str, dict[str, int]]) -> None:
    """`server.services` serves the CLI, the MCP server and the page alike: it depends on none of them."""
    found = [
        f"{module}:{line} imports {target}"
        for module, edges in graph.items()
        if module.startswith("server.services")
        for target, line in edges.items()
        if target.startswith(FACES)
    ]
    assert found == []
