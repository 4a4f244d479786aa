"""No product function is longer than a reader can hold at once: 60 lines, decorators and docstring
included. A longer one is split into steps with names that say what each does."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

LIMIT = 60
PACKAGES = ("server", "tools", "storage", "importers")


def long_functions(root: Path) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    length = (node.end_lineno or node.lineno) - start + 1
                    if length > LIMIT:
                        found.append(f"{relative}:{node.lineno} {node.name} is {length} lines")
    return found


def test_no_product_function_is_longer_than_the_limit() -> None:
    assert long_functions(REPO_ROOT) == []


def test_the_check_counts_decorators_and_body(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 2))
    (tmp_path / "tools" / "long.py").write_text(
        f"@staticmethod\ndef fits():\n{body}\n\n\n@a\n@b\ndef over():\n{body}\n"
    )
    assert long_functions(tmp_path) == [f"tools/long.py:{LIMIT + 5} over is {LIMIT + 1} lines"]
