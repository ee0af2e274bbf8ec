"""Noise shaping (Li, Clarté & Acerbi 2023, App. B.3, eq. S17) against hand-computed values."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gpcompose.svbmc import shaping_variance, total_noise_variance

THRESHOLD = 20.0  # θ = 10 D with D = 2


def test_reference_values():
    delta_y = jnp.array([0.0, 5.0, 10.0, 20.0, 40.0, 100.0, 200.0])
    expected = np.array([1e-3, 5.62e-3, 3.16e-2, 1.0, 2.0, 17.0, 82.0])
    np.testing.assert_allclose(shaping_variance(delta_y, THRESHOLD), expected, rtol=5e-3)


def test_monotone_continuous_at_threshold_and_negative_drops_clipped():
    delta_y = jnp.linspace(-5.0, 300.0, 3051)
    values = shaping_variance(delta_y, THRESHOLD)
    assert np.all(np.diff(np.asarray(values)[delta_y >= 0]) > 0)
    np.testing.assert_allclose(values[delta_y <= 0], 1e-3, rtol=1e-14)
    around = shaping_variance(jnp.array([THRESHOLD - 1e-9, THRESHOLD, THRESHOLD + 1e-9]), THRESHOLD)
    np.testing.assert_allclose(around, 1.0, atol=1e-9)


def test_shaping_standard_deviation_grows_with_slope_lambda():
    slope = 0.05
    delta_y = jnp.array([1e6, 2e6])
    standard_deviation = jnp.sqrt(shaping_variance(delta_y, THRESHOLD, slope=slope))
    np.testing.assert_allclose((standard_deviation[1] - standard_deviation[0]) / 1e6, slope, rtol=1e-6)
    np.testing.assert_allclose(standard_deviation / delta_y, slope, rtol=1e-4)


def test_keywords_change_the_end_points():
    values = shaping_variance(jnp.array([0.0, 10.0, 20.0]), 10.0, minimum_variance=1e-4, median_variance=4.0, slope=0.3)
    np.testing.assert_allclose(values, [1e-4, 4.0, 4.0 + 0.09 * 100.0], rtol=1e-12)


def test_total_noise_uses_the_maximum_over_used_rows_and_ignores_the_rest():
    y = jnp.array([-3.0, 0.0, -40.0, 100.0, -23.0])
    mask = jnp.array([True, True, True, False, True])
    observation_variance = jnp.array([1e-5, 2e-5, 1e-5, 0.0, 3e-5])
    total = total_noise_variance(y, observation_variance, mask, THRESHOLD)
    delta_y = jnp.array([3.0, 0.0, 40.0, 0.0, 23.0])
    expected = observation_variance + shaping_variance(delta_y, THRESHOLD)
    np.testing.assert_allclose(total[mask], expected[mask], rtol=1e-12)
    assert total[3] == 1.0
    scalar = total_noise_variance(y, 1e-5, mask, THRESHOLD)
    np.testing.assert_allclose(scalar[0], 1e-5 + shaping_variance(3.0, THRESHOLD), rtol=1e-12)


def test_data_weights_are_at_most_one(getkey):
    y = -jnp.abs(50.0 * jax.random.normal(getkey(), (200,)))
    observation_variance = jnp.exp(jax.random.uniform(getkey(), (200,), minval=-12.0, maxval=1.0))
    mask = jnp.ones(200, bool)
    weights = observation_variance / total_noise_variance(y, observation_variance, mask, THRESHOLD)
    assert np.all((weights > 0) & (weights <= 1))


def test_jit_once_vmap_and_float32(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def batched(y, mask):
        return jax.vmap(total_noise_variance, in_axes=(0, None, 0, None))(y, 1e-5, mask, THRESHOLD)

    for _ in range(2):
        y = 10.0 * jax.random.normal(getkey(), (3, 12))
        mask = jax.random.bernoulli(getkey(), 0.7, (3, 12)).at[:, 0].set(True)
        loop = [total_noise_variance(row, 1e-5, row_mask, THRESHOLD) for row, row_mask in zip(y, mask)]
        np.testing.assert_allclose(batched(y, mask), np.stack(loop), rtol=1e-12)

    y32 = jnp.array([0.0, -5.0, -50.0], jnp.float32)
    total32 = total_noise_variance(y32, jnp.float32(1e-5), jnp.ones(3, bool), THRESHOLD)
    assert total32.dtype == jnp.float32
    np.testing.assert_allclose(total32, [1e-3 + 1e-5, 5.62e-3 + 1e-5, 1.0 + 0.0025 * 900 + 1e-5], rtol=2e-3)
