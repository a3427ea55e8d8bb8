"""Tests of the benchmarks (``benchmarks/`` at the top of the repository)."""
