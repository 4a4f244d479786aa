"""`bench.performance.load` end to end on a tiny store: real server over HTTP, real clients, a concurrent import."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.performance.load import main

pytestmark = pytest.mark.integration


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_short_load_run_has_no_errors_and_leaves_no_server_or_import_behind(
    tmp_path: Path, model_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(model_cache_dir))
    out = tmp_path / "load.json"
    status = main(["--build", "300", "--clients", "4", "--seconds", "3", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["errors"] == 0, result["error_samples"]
    assert status == 0
    assert result["calls"] > 0
    assert result["tools"]["conversation_search"]["calls"] > 0
    assert result["import"]["new"] == result["import_chats"]
    assert gone(result["pids"]["server"])
    assert gone(result["pids"]["import"])


def test_a_host_off_loopback_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="loopback only"):
        main(["--build", "10", "--host", "0.0.0.0", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()
