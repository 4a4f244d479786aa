"""Retrieval quality on LoCoMo and LongMemEval_S, measured through pastchats' own import and search.

Run with `python -m bench.quality --help`; see docs/BENCHMARKS.md.
"""
