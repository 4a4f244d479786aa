"""A threaded scan leaves no thread spinning: its OpenMP workers wait without taking a core."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from storage.stores.vector_matrix import HAVE_SIMSIMD

# In a fresh process (the OpenMP runtime reads its wait policy once, when simsimd loads it): a real
# matrix built and scanned on two threads, then the process's CPU time while its main thread sleeps.
# Spinning workers (libgomp's default) burned ~5 ms of CPU in each 50 ms sleep here; waiting ones ~0.1.
CHILD = """
import statistics, sys, time
from pathlib import Path
import numpy as np
from storage.query.filters import Filters
from tests.storage.test_vector_matrix import synthetic_matrix

snapshot = synthetic_matrix(Path(sys.argv[1]), 20_000, 384, seed=3).snapshot()
assert snapshot is not None and snapshot.codes is not None
query = snapshot.vectors[5].astype(np.float32)
spent = []
for _ in range(7):
    snapshot.top(query, 600, Filters(), [], 2)
    started = time.process_time()
    time.sleep(0.05)
    spent.append(time.process_time() - started)
print("IDLE_CPU_MS", statistics.median(spent) * 1000)
"""


@pytest.mark.skipif(not HAVE_SIMSIMD, reason="the scan's threads are simsimd's")
def test_after_a_two_thread_scan_the_process_uses_almost_no_cpu_while_it_sleeps(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(root)}  # no OMP_* set
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "vectors")], env=env, capture_output=True, text=True, check=True
    )
    idle_ms = float(done.stdout.split("IDLE_CPU_MS")[-1])
    assert idle_ms < 1.5, done.stdout + done.stderr
