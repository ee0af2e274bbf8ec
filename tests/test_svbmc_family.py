"""SVBMC's choice of the variational family at `init` (`SVBMCOptions.mixture_family="auto"`):
the rotated family is kept only where its ELBO is clearly higher, and the active phase keeps
the family that `init` chose."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import svbmc
from gpcompose.benchmarks.metrics import gskl

from .svbmc_targets import (
    BATCH,
    BUDGET,
    CORRELATED_COVARIANCE,
    NUM_INITIAL,
    SMALL,
    correlated_evaluations,
    correlated_log_density,
    initial_evaluations,
)

UNWHITENED_AXIS = dataclasses.replace(SMALL, mixture_family="axis", whitening=False)
UNWHITENED_AUTO = dataclasses.replace(SMALL, mixture_family="auto", whitening=False)


def test_auto_family_keeps_the_rotated_mixture_on_a_correlated_target_through_the_run():
    """Without whitening, on N(0, C) with correlation 0.95, the build-up of the axis-aligned
    family (K ≤ 4) stays 0.166 below log Z = 0 (BQ sd 0.052) with GsKL 0.17 (measured);
    "auto" builds both families on the same surrogate and keeps the rotated one, whose ELBO
    is higher by 3.1 combined sds (> `family_min_elbo_gain` = 2): ELBO +0.077 (BQ sd 0.058),
    GsKL 0.011 (measured; the "rotated" init gives the same to every digit). The active
    rounds keep the rotated family (a flag no optimiser moves) and end within 0.05 of log Z
    with GsKL < 0.01 (measured: ELBO −0.016, BQ sd 0.016, GsKL 0.006)."""
    X, y = correlated_evaluations()
    settings = dict(key=jax.random.key(4), budget=BUDGET, batch_size=BATCH)
    axis_aligned = svbmc.init(X, y, **settings, options=UNWHITENED_AXIS)
    state = svbmc.init(X, y, **settings, options=UNWHITENED_AUTO)
    assert bool(state.mixture.is_rotated)
    assert float(state.elbo) > float(axis_aligned.elbo) + 0.1
    assert abs(float(state.elbo)) < 2 * float(state.elbo_sd)
    posterior = svbmc.result(state).posterior
    assert gskl(posterior.mean(), posterior.covariance(), jnp.zeros(2), jnp.asarray(CORRELATED_COVARIANCE)) < 0.02

    for key in jax.random.split(jax.random.key(5), BUDGET):
        x = svbmc.ask(state, key)
        state = svbmc.tell(state, x, float(correlated_log_density(x)))
    result = svbmc.result(state)
    assert int(state.num_evaluations) == BUDGET and bool(state.mixture.is_rotated)
    assert abs(float(result.elbo)) < 0.05
    divergence = gskl(
        result.posterior.mean(), result.posterior.covariance(), jnp.zeros(2), jnp.asarray(CORRELATED_COVARIANCE)
    )
    assert float(divergence) < 0.01


def test_auto_family_keeps_the_axis_aligned_mixture_unless_the_rotated_elbo_is_clearly_higher():
    """On the axis-aligned Gaussian target, with whitening off, both families reach log Z
    (rotated − axis-aligned ELBO: −0.15, 0.00, −0.30, −0.17 combined sds for keys 0–3,
    measured), so "auto" keeps the axis-aligned one (flag on), and its init is the "axis"
    init, to Monte Carlo error (the flagged pytree goes through the full-matrix code,
    `test_elbo.py`)."""
    X, y = initial_evaluations(jax.random.key(0), NUM_INITIAL)
    settings = dict(key=jax.random.key(0), budget=BUDGET, batch_size=BATCH)
    auto = svbmc.init(X, y, **settings, options=UNWHITENED_AUTO)
    axis_aligned = svbmc.init(X, y, **settings, options=UNWHITENED_AXIS)
    assert auto.mixture.lambda_offdiagonal is not None and not bool(auto.mixture.is_rotated)
    assert abs(float(auto.elbo) - float(axis_aligned.elbo)) < 1e-3
    np.testing.assert_allclose(auto.mixture.mean(), axis_aligned.mixture.mean(), atol=1e-4)
    np.testing.assert_allclose(auto.mixture.covariance(), axis_aligned.mixture.covariance(), atol=1e-4)


@pytest.mark.parametrize("name", ["family_min_elbo_gain", "whitening_max_elbo_drop"])
def test_the_sd_thresholds_must_be_finite(name):
    with pytest.raises(ValueError, match=f"`{name}` must be finite"):
        svbmc.SVBMCOptions(**{name: float("nan")})
