"""Benchmarks (run on demand with ``make bench``; never part of the test command)."""
