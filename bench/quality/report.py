"""The printed tables and the JSON record of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# Published / reference numbers from ../shared/bench/README.md, for the printed comparison only.
LOCOMO_REFERENCE = {
    "ref BM25 turns": {"recall@5": 45.4, "recall@10": 52.5, "recall@25": 64.8, "recall@50": 70.1},
    "pub DRAGON turns": {"recall@5": 56.7, "recall@10": 66.2, "recall@25": 76.7, "recall@50": 82.7},
    "ref BM25 sessions": {"session_recall@5": 86.2},
}
LME_REFERENCE = {
    "ref BM25": {
        "recall_any@5": 0.854,
        "recall_all@5": 0.750,
        "ndcg_any@5": 0.744,
        "recall_all@10": 0.813,
    },
}


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _frac(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def _ms(latency: dict[str, Any]) -> str:
    return "—" if latency.get("median_ms") is None else f"{latency['median_ms']:.1f}"


def locomo_tables(result: dict[str, Any]) -> list[Table]:
    cols = ["recall@5", "recall@10", "recall@25", "recall@50", "session_recall@5"]
    main = Table(title=f"LoCoMo — {result['questions']} questions, recall % (k in turns; sessions @5)")
    main.add_column("mode")
    for col in [*cols, "median ms"]:
        main.add_column(col.replace("recall", "R").replace("session_", "sess "), justify="right")
    for mode, data in result["modes"].items():
        main.add_row(mode, *(_pct(data["overall"][c]) for c in cols), _ms(data["latency"]))
    for name, ref in LOCOMO_REFERENCE.items():
        main.add_row(f"[dim]{name}[/dim]", *(f"{ref[c]:.1f}" if c in ref else "" for c in cols), "")
    per_cat = Table(title="LoCoMo by category — R@10 / R@50 %")
    per_cat.add_column("category")
    per_cat.add_column("n", justify="right")
    for mode in result["modes"]:
        per_cat.add_column(mode, justify="right")
    categories = next(iter(result["modes"].values()))["by_category"] if result["modes"] else {}
    for cat, summary in categories.items():
        cells = [
            f"{_pct(d['by_category'][cat]['recall@10'])} / {_pct(d['by_category'][cat]['recall@50'])}"
            for d in result["modes"].values()
        ]
        per_cat.add_row(cat, str(summary["n"]), *cells)
    return [main, per_cat]


def longmemeval_table(variant: str, result: dict[str, Any]) -> Table:
    strict_cols = ["recall_any@5", "recall_all@5", "ndcg_any@5", "recall_any@10", "recall_all@10", "ndcg_any@10"]
    modes = result["modes"]
    first = next(iter(modes.values()), None)
    n_strict = first["strict"]["n"] if first else 0
    n_noabs = first["no_abs"]["n"] if first else 0
    table = Table(
        title=f"LongMemEval_S — {variant} turns; strict n={n_strict}, no-abs n={n_noabs}"
        "; turn R = recall of has_answer turns"
    )
    table.add_column("mode")
    for col in strict_cols:
        table.add_column(col.replace("recall_", "").replace("ndcg_any", "ndcg"), justify="right")
    for col in ("noabs any@5", "noabs all@5", "turn R@10", "turn R@50", "median ms"):
        table.add_column(col, justify="right")
    for mode, data in modes.items():
        table.add_row(
            mode,
            *(_frac(data["strict"][c]) for c in strict_cols),
            _frac(data["no_abs"]["recall_any@5"]),
            _frac(data["no_abs"]["recall_all@5"]),
            _frac(data["turns"]["turn_recall@10"]),
            _frac(data["turns"]["turn_recall@50"]),
            _ms(data["latency"]),
        )
    if variant == "user":
        for name, ref in LME_REFERENCE.items():
            table.add_row(f"[dim]{name}[/dim]", *(f"{ref[c]:.3f}" if c in ref else "" for c in strict_cols))
    return table


def print_report(record: dict[str, Any], console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log file: wide enough for the LongMemEval table
            console = Console(width=170)
    if "locomo" in record:
        for table in locomo_tables(record["locomo"]):
            console.print(table)
        console.print(f"LoCoMo import: {record['locomo']['import']}")
    for variant, result in record.get("longmemeval", {}).items():
        console.print(longmemeval_table(variant, result))
        console.print(f"LongMemEval ({variant}) import: {result['import']}")
    console.print(f"run took {record['seconds']:.0f} s; embedder {record['embedder']}; cache {record['cache']}")


def write_json(record: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
