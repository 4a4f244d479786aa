"""What the query grammar costs a search: each benchmark query as typed, with its words quoted as a phrase,
and with a word of another query excluded, searched one after another (`Library.search`, the query's
vector forgotten before each) on a store `bench.performance.perf build` made.

    FASTEMBED_CACHE_PATH=../shared/fastembed_cache uv run python -m bench.performance.grammar --home STORE

A phrase adds a `Must` clause to the keyword leg and one keyword search over the vector leg's hits; an
exclusion adds a `MustNot`, that search, and one search per chat found (`KeywordIndex.chats_holding`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.corpus.synthetic import queries
from bench.performance.perf_run import open_library, summary, timed
from storage.embedding.embedder import FastEmbedder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args(argv)
    library = open_library(args.home)
    qs = queries(count=args.repeats)
    forms = {
        "as typed": qs,
        "quoted as a phrase": [f'"{q}"' for q in qs],
        "excluding a word": [f"{q} -{qs[(i + 1) % len(qs)].split()[0]}" for i, q in enumerate(qs)],
    }
    library.search("warm up")
    times: dict[str, list[float]] = {form: [] for form in forms}
    for i in range(len(qs)):
        for form, typed in forms.items():  # query by query, each form in turn: the same machine moment
            if isinstance(library.embedder, FastEmbedder):
                library.embedder.clear_query_cache()
            times[form].append(timed(library.search, typed[i], max_results=5))
    out = {form: summary(seconds) for form, seconds in times.items()}
    plain = out["as typed"]["p50_ms"]
    for form in forms:
        out[form]["p50_ratio"] = round(out[form]["p50_ms"] / plain, 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
