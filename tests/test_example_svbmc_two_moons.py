"""Smoke test of examples/svbmc_two_moons.py: the CI-sized run writes its plot and its ELBO is
within 0.3 of the grid-quadrature log Z of two moons (a posterior that misses either moon is off
by more: |log(2/3)| ≈ 0.41 without the lighter moon, log 3 ≈ 1.1 without the heavier one)."""

import math

import jax

from .examples_loader import load_example


def test_svbmc_two_moons_smoke(tmp_path):
    row = load_example("svbmc_two_moons").run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert row["method"] == "SVBMC" and row["metric"] == "ΔLML"
    assert (tmp_path / "svbmc_two_moons.png").is_file() and row["png"] == str(tmp_path / "svbmc_two_moons.png")
    assert math.isfinite(row["value"]) and row["value"] < 0.3
    assert row["seconds"] > 0.0
