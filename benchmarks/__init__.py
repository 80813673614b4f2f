"""Benchmarks: ``python -m benchmarks`` runs them all and prints one table (docs/benchmarks.md)."""
