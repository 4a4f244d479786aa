"""Benchmarks: run against a real store through the product's own code paths. Not installed."""
