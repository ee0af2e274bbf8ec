"""Benchmark problems and metrics shared by examples, tests and benchmark scripts."""

from . import metrics as metrics
