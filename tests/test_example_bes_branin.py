"""examples/bes_branin.py (issue 9): bounded entropy search and EI on Branin, same seed."""

import jax
import numpy as np

from .examples_loader import load_example

example = load_example("bes_branin")

SUMMARY_KEYS = {"method", "problem", "metric", "value", "reference", "seconds", "png"}


def test_smoke_run_gets_close_to_the_branin_minimum(tmp_path):
    """16 evaluations (2 random) with small sample and search counts. Measured final simple
    regret of BES on seeds 0–7: 0.53, 1.5, 0.00056, 0.88, 0.79, 0.20, 0.0015, 0.0094 (seed 0
    is the test's). Regret below 1 needs a point where Branin is within 1 of its minimum,
    1.9 % of the box: 16 uniform points find one with probability 0.27, a method that
    proposes points at random or away from the minimisers rarely does."""
    row = example.run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert SUMMARY_KEYS <= row.keys()
    assert (tmp_path / "bes_branin.png").is_file() and row["png"] == str(tmp_path / "bes_branin.png")
    for name in ("bes_regret", "ei_regret"):
        regret = row[name]
        assert regret.shape == (16,) and np.all(np.isfinite(regret)) and np.all(regret >= 0.0)
        assert np.all(np.diff(regret) <= 0.0)  # simple regret never increases
    assert row["value"] == row["bes_regret"][-1]
    assert row["value"] < 1.0
