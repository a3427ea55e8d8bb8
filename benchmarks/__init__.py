"""The speed and memory benchmarks run by `make bench` and `make bench-data` (not tests)."""
