"""The vector leg at sizes no import reaches here: a matrix of N synthetic passages through the real code.

    uv run python -m bench.performance.perf_scale --passages 1000000 [--queries 30]

Synthetic vectors (clustered: 2,000 random centres plus noise, L2-normalised, 384 dimensions) are
written with `VectorMatrix.build` and searched with `Snapshot.top`, unfiltered and with a project +
time filter, against a NumPy exact float32 scan over the same vectors in the same run; recall@10 of
the float16 matrix against that exact scan is reported too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from storage.query.filters import Filters
from storage.stores.vector_matrix import META_COLUMNS, VectorMatrix

DIM = 384


def synthetic(rows: int, seed: int = 1) -> tuple[np.ndarray, pa.Table]:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2_000, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), rows)] + 0.8 * rng.standard_normal((rows, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    start = datetime(2022, 1, 1)
    meta = pa.table(
        {
            "id": pa.array([f"c{i // 20}\x1f{i % 20}\x1f0" for i in range(rows)]),
            "conversation_id": pa.array([f"c{i // 20}" for i in range(rows)]),
            "first_index": pa.array(np.arange(rows) % 20, pa.int32()),
            "last_index": pa.array(np.arange(rows) % 20, pa.int32()),
            "message_ids": pa.array([[f"m{i % 20}"] for i in range(rows)], pa.list_(pa.string())),
            "source": pa.array(rng.choice(["claude", "chatgpt", "codex"], rows)),
            "project": pa.array(rng.choice(["homelab", "work", "thesis", "family", "infra"], rows)),
            "updated_at": pa.array([start + timedelta(minutes=int(m)) for m in rng.integers(0, 1_500_000, rows)]),
        }
    )
    # the message time that time filters select on (`storage.stores.vector_matrix`, format 2): the chat's here
    return vectors, meta.append_column("at", meta.column("updated_at"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    vectors, meta = synthetic(args.passages)
    queries = vectors[np.random.default_rng(2).integers(0, len(vectors), args.queries)] + 0.05
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    filters = Filters(project="work", after=datetime(2023, 6, 1, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        matrix = VectorMatrix(Path(tmp), DIM)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM)
        table = pa.Table.from_arrays([*meta.columns, column], names=[*META_COLUMNS, "vector"])
        batches = table.to_batches(65_536)
        started = time.perf_counter()
        matrix.build(batches, 1, meta.schema)
        build_s = time.perf_counter() - started
        snapshot = matrix.snapshot()
        assert snapshot is not None
        times: dict[str, list[float]] = {
            "matrix_top100": [],
            "matrix_top100_filtered": [],
            "numpy_f32_exact_top100": [],
        }
        recall = []
        for q in queries:
            snapshot.top(q, 100, Filters(), [])  # warm the pages
            started = time.perf_counter()
            ours = snapshot.top(q, 100, Filters(), [])
            times["matrix_top100"].append(time.perf_counter() - started)
            started = time.perf_counter()
            snapshot.top(q, 100, filters, [])
            times["matrix_top100_filtered"].append(time.perf_counter() - started)
            started = time.perf_counter()
            scores = vectors @ q
            best = np.argpartition(-scores, 100)[:100]
            best = best[np.argsort(-scores[best])]
            times["numpy_f32_exact_top100"].append(time.perf_counter() - started)
            recall.append(len({r for _, r in ours[:10]} & set(best[:10].tolist())) / 10)

    def summary(values: list[float]) -> dict[str, float]:
        ms = sorted(v * 1000 for v in values)
        return {"p50_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[round(0.95 * (len(ms) - 1))], 1)}

    out = {name: summary(values) for name, values in times.items()}
    out["ratio_matrix_vs_numpy_p50"] = round(
        out["matrix_top100"]["p50_ms"] / out["numpy_f32_exact_top100"]["p50_ms"], 2
    )
    print(
        json.dumps(
            {
                "passages": args.passages,
                "build_s": round(build_s, 1),
                "recall@10_vs_f32_exact": statistics.mean(recall),
                **out,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
