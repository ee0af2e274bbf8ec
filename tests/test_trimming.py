"""Trimming of low-density points (SVBMC App. B.1)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose.svbmc import SVBMC
from gpcompose.svbmc._training import censoring_level, training_rows
from gpcompose.svbmc._trimming import trim_mask


def test_hand_built_noisy_example():
    # D = 2: η = 40, β = 1.96. Best lower bound: row 1, 10 − 1.96·1 = 8.04.
    y = jnp.array([0.0, 10.0, -30.0, -32.0, -31.0, 50.0])
    observation_sd = jnp.array([0.5, 1.0, 0.5, 0.5, 1.0, 0.1])
    mask = jnp.array([True, True, True, True, True, False])
    keep = trim_mask(y, observation_sd, mask, 40.0)
    # max lcb − ucb: row 2: 8.04 − (−29.02) = 37.06 kept; row 3: 8.04 − (−31.02) = 39.06 kept;
    # row 4: 8.04 − (−29.04) = 37.08 kept. Row 5 is unused (and must not set the maximum).
    np.testing.assert_array_equal(keep, [True, True, True, True, True, False])
    keep = trim_mask(y.at[3].set(-33.0), observation_sd, mask, 40.0)
    # row 3: 8.04 − (−32.02) = 40.06 > 40.
    np.testing.assert_array_equal(keep, [True, True, True, False, True, False])


def test_noiseless_threshold_is_a_drop_of_twenty_d():
    dimension = 3
    threshold = 20.0 * dimension
    y = jnp.array([5.0, 5.0 - 59.9, 5.0 - 60.0, 5.0 - 60.1, -1e3])
    keep = trim_mask(y, 0.0, jnp.ones(5, bool), threshold)
    np.testing.assert_array_equal(keep, [True, True, True, False, False])
    # A tiny noise (σ²_obs = 1e-5) moves the boundary by 2β√1e-5 ≈ 0.0124 only.
    keep = trim_mask(y, jnp.sqrt(1e-5), jnp.ones(5, bool), threshold, beta=1.96)
    np.testing.assert_array_equal(keep, [True, True, True, False, False])


def test_unused_rows_never_kept_and_best_row_always_kept(getkey):
    y = 100.0 * jax.random.normal(getkey(), (50,))
    observation_sd = jnp.abs(jax.random.normal(getkey(), (50,)))
    mask = jax.random.bernoulli(getkey(), 0.6, (50,))
    keep = trim_mask(y, observation_sd, mask, 20.0)
    assert not np.any(keep & ~mask)
    lower_confidence = np.where(mask, y - 1.96 * observation_sd, -np.inf)
    assert keep[np.argmax(lower_confidence)]
    reference = mask & (np.max(lower_confidence) - (y + 1.96 * observation_sd) <= 20.0)
    np.testing.assert_array_equal(keep, reference)


def test_jit_once_vmap_and_float32(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def batched(y, observation_sd, mask):
        return jax.vmap(trim_mask, in_axes=(0, 0, 0, None))(y, observation_sd, mask, 40.0)

    for _ in range(2):
        y = 30.0 * jax.random.normal(getkey(), (4, 20))
        observation_sd = jnp.abs(jax.random.normal(getkey(), (4, 20)))
        mask = jax.random.bernoulli(getkey(), 0.8, (4, 20))
        loop = [trim_mask(*row, 40.0) for row in zip(y, observation_sd, mask)]
        np.testing.assert_array_equal(batched(y, observation_sd, mask), np.stack(loop))

    keep = trim_mask(jnp.array([0.0, -39.0, -41.0], jnp.float32), jnp.float32(0.0), jnp.ones(3, bool), 40.0)
    np.testing.assert_array_equal(keep, [True, True, False])


def test_active_phase_rows_below_the_trimming_level_are_censored_not_dropped():
    """`training_rows`: initial rows below y⋆ = max lcb − η are trimmed (App. B.1); an
    active-phase row that low is kept with its value raised to y⋆ and the shaping noise of
    Δy = y_max − y⋆ (eq. S17); with `censor_active_evaluations=False` it is trimmed too."""
    # D = 2: η = 40, θ_σ = 20, σ²_obs = 1e-5; rows 0–3 initial, 4–6 active (row 6 failed)
    y = jnp.array([0.0, -10.0, -50.0, -45.0, -1000.0, -5.0, -2000.0])
    variance = jnp.full(7, 1e-5)
    succeeded = jnp.array([True, True, True, True, True, True, False])
    rows = (jnp.zeros((7, 2)), y, variance, succeeded)
    level = 0.0 - 1.96 * np.sqrt(1e-5) - 40.0

    keep, values, noise = training_rows(rows, SVBMC(), 4)
    np.testing.assert_array_equal(keep, [True, True, False, False, True, True, False])
    np.testing.assert_allclose(values[:6], [0.0, -10.0, -50.0, -45.0, level, -5.0], rtol=1e-14)
    # σ²_shape(Δy) = σ²_med + λ²(Δy − θ)² for Δy ≥ θ: 1 + 0.05²·(−level − 20)²
    np.testing.assert_allclose(noise[4], 1e-5 + 1.0 + 0.05**2 * (-level - 20.0) ** 2, rtol=1e-12)
    assert float(censoring_level(rows, SVBMC())) == pytest.approx(level, rel=1e-14)

    keep, values, _ = training_rows(rows, SVBMC(censor_active_evaluations=False), 4)
    np.testing.assert_array_equal(keep, [True, True, False, False, False, True, False])
    np.testing.assert_array_equal(values, y)
