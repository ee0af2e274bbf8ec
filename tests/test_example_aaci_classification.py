"""Smoke test of examples/aaci_classification.py: the CI-sized CAVI run writes its plot and its
class probabilities are on average within 0.05 of the Gibbs sampler's (exact posterior). CAVI
that did not move from the prior (P = 0.5) or predicted with the wrong sign would be off by
several tenths where the data are informative."""

import math

import jax

from .examples_loader import load_example


def test_aaci_classification_smoke(tmp_path):
    row = load_example("aaci_classification").run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert row["method"] == "AACI (CAVI)" and row["metric"] == "mean |ΔP(y=1)|"
    assert (tmp_path / "aaci_classification.png").is_file() and row["png"] == str(tmp_path / "aaci_classification.png")
    assert math.isfinite(row["value"]) and row["value"] < 0.05
