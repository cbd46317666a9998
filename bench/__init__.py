"""Benchmarks: each prints JSON on stdout."""
