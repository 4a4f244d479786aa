"""`storage.lancedb_import`: lancedb without its REST client until something uses it, and the normal
import whenever the deferral cannot be trusted. Each case runs in a fresh interpreter: an import can
only be observed once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from storage.lancedb_import import read_plan

REPO = Path(__file__).resolve().parents[2]


def run(code: str, tmp_path: Path) -> str:
    script = f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_opening_a_store_does_not_import_the_rest_client(tmp_path: Path) -> None:
    out = run(
        f"""
        from storage.lance_store import LanceStore
        from pathlib import Path
        store = LanceStore(Path({str(tmp_path / "lancedb")!r}), 4)
        loaded = [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api")]
        print(store.counts(), loaded, "lance_namespace_urllib3_client.api_client" in sys.modules)
        """,
        tmp_path,
    )
    assert out.split() == ["(0,", "0,", "0)", "[]", "False"]


def test_the_rest_client_and_its_models_are_the_real_ones_once_used(tmp_path: Path) -> None:
    out = run(
        """
        from storage.lancedb_import import import_lancedb
        import_lancedb()
        import lance_namespace, lance_namespace_urllib3_client as client
        from lance_namespace import DescribeTableRequest
        request = DescribeTableRequest(id=["chats"])
        assert isinstance(request, DescribeTableRequest)
        assert type(request) is lance_namespace.DescribeTableRequest  # the stand-in was replaced
        class Mine(DescribeTableRequest):
            pass
        assert Mine(id=["x"]).id == ["x"]
        print(client.ApiClient.__module__, client.TableApi.__module__)
        """,
        tmp_path,
    )
    assert out.split() == ["lance_namespace_urllib3_client.api_client", "lance_namespace_urllib3_client.api.table_api"]


def test_a_directory_namespace_still_works(tmp_path: Path) -> None:
    out = run(
        f"""
        from storage.lancedb_import import import_lancedb
        lancedb = import_lancedb()
        db = lancedb.connect_namespace("dir", {{"root": {str(tmp_path / "ns")!r}}})
        db.create_table("chats", data=[{{"id": "a", "vector": [0.5, 0.5]}}])
        print(db.list_tables().tables, db.open_table("chats").count_rows())
        """,
        tmp_path,
    )
    assert out.split() == ["['chats']", "1"]


def test_a_failing_deferred_import_falls_back_to_the_normal_import(tmp_path: Path) -> None:
    out = run(
        f"""
        import importlib.abc
        class BreaksOnce(importlib.abc.MetaPathFinder):  # as if a lancedb release changed under us
            armed = True
            def find_spec(self, name, path, target=None):
                if name == "lancedb.table" and self.armed:
                    self.armed = False
                    raise ImportError("simulated incompatible lancedb")
                return None
        sys.meta_path.insert(0, BreaksOnce())
        from storage.lance_store import LanceStore
        from pathlib import Path
        store = LanceStore(Path({str(tmp_path / "lancedb")!r}), 4)
        counts = store.counts()  # LanceDB is imported on the store's first use
        import lance_namespace
        from storage.lancedb_import import Deferred
        deferred = [k for k, v in vars(lance_namespace).items() if isinstance(v, Deferred)]
        print(counts, deferred, "lance_namespace_urllib3_client.api.table_api" in sys.modules)
        """,
        tmp_path,
    )
    assert out.split() == ["(0,", "0,", "0)", "[]", "True"]


def test_a_client_package_that_does_more_than_import_is_not_deferred(tmp_path: Path) -> None:
    expected = tmp_path / "expected.py"
    expected.write_text('"""Doc."""\n__version__ = "1"\nfrom pkg.models.a import A\nfrom pkg.api.b import B as C\n')
    assert read_plan(expected, "pkg", allow_version=True, client="pkg") == {"A": "pkg.models.a", "C": "pkg.api.b"}
    assert read_plan(expected, "pkg.models", allow_version=True, client="pkg") == {"A": "pkg.models.a"}
    assert read_plan(expected, "pkg.models", allow_version=False, client="pkg") is None
    for extra in ("import logging\n", "configure()\n", "from pkg.models import *\n", "from os import path\n"):
        changed = tmp_path / "changed.py"
        changed.write_text(expected.read_text() + extra)
        assert read_plan(changed, "pkg", allow_version=True, client="pkg") is None, extra
    assert read_plan(tmp_path / "missing.py", "pkg", allow_version=True, client="pkg") is None
