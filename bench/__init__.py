"""The frs-mcp benchmark suite (issue 6): speed at scale, tokens on the corpus, peers.

Run it with `make bench` (or `python -m bench`, `--quick` for a smoke run). It writes
BENCHMARKS.md and bench/results.json. Not part of the test suite: timings live here only.
"""
