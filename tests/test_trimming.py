"""Trimming of low-density points (SVBMC App. B.1)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

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
