"""Smoke test of examples/steingp_neal.py: the CI-sized SteinGP run writes its plot and its
predictive mean is within 0.2 RMSE of Neal's noise-free function at the 100 test inputs (the
best constant predictor is off by the sd of f there, about 0.6; the noise sd is 0.1)."""

import math

import jax
import jax.numpy as jnp

from .examples_loader import load_example


def test_steingp_neal_smoke(tmp_path):
    example = load_example("steingp_neal")
    row = example.run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert row["method"] == "SteinGP" and row["metric"] == "test RMSE"
    assert (tmp_path / "steingp_neal.png").is_file() and row["png"] == str(tmp_path / "steingp_neal.png")
    _, _, X_test, _ = example.make_data(jax.random.key(example.DATA_SEED))
    constant_rmse = float(jnp.std(example.latent(X_test[:, 0])))
    assert constant_rmse > 0.4
    assert math.isfinite(row["value"]) and row["value"] < 0.2
