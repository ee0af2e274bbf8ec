"""Smoke test of examples/numpyro_bridge.py: the CI-sized run (12 initial + 3 BVBMC evaluations,
400 NUTS draws) writes its plot; NUTS on the NumPyro model agrees with the grid of the bridged
log density (so the bridge's log-Jacobian is NumPyro's); the BVBMC draws come back as (μ, τ)
sites with τ > 0, and the ArviZ summaries hold the same posterior means."""

import math

import jax
import numpy as np

from .examples_loader import load_example


def test_numpyro_bridge_smoke(tmp_path):
    row = load_example("numpyro_bridge").run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert (tmp_path / "numpyro_bridge.png").is_file() and row["png"] == str(tmp_path / "numpyro_bridge.png")
    nuts_gskl = float(row["reference"].split()[-1])
    assert nuts_gskl < 0.05  # NUTS (its own potential) against the grid of the bridged density
    assert math.isfinite(row["value"]) and row["value"] < 0.5
    assert abs(row["elbo"] - row["log_normaliser"]) == row["evidence_error"] < 1.0
    assert 0.0 <= row["mmtv_bvbmc_nuts"] < 0.5
    for method in ("bvbmc", "nuts"):
        summary = row["arviz_summary"][method]
        assert list(summary.index) == ["mu", "tau"]
        for name in ("mu", "tau"):
            np.testing.assert_allclose(summary.loc[name, "mean"], row["posterior"][name][method][0], atol=1e-3)
        assert summary.loc["tau", "hdi_3%"] >= 0.0
