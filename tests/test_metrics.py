"""Benchmark metrics: GsKL against closed forms, MMTV against the exact total variation of
shifted Gaussians, ΔLML."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ndtr

from gpcompose.problems import metrics

from .helpers import autodiff_gradient, finite_difference_gradient

gskl = eqx.filter_jit(metrics.gskl)
mmtv = eqx.filter_jit(metrics.mmtv)


def gskl_by_hand(mean_p, covariance_p, mean_q, covariance_q):
    """¼[tr(Σ_q⁻¹Σ_p) + tr(Σ_p⁻¹Σ_q) − 2D + δᵀ(Σ_p⁻¹ + Σ_q⁻¹)δ] (the log-determinants cancel)."""
    inverse_p, inverse_q = np.linalg.inv(covariance_p), np.linalg.inv(covariance_q)
    difference = mean_p - mean_q
    dimension = mean_p.shape[0]
    return 0.25 * (
        np.trace(inverse_q @ covariance_p)
        + np.trace(inverse_p @ covariance_q)
        - 2 * dimension
        + difference @ (inverse_p + inverse_q) @ difference
    )


def test_gskl_of_shifted_unit_gaussians():
    """KL(N(0, 1) ‖ N(δ, 1)) = δ²/2 both ways: δ = √2 gives 1, δ = ½ gives 1/8."""
    for shift, expected in ((math.sqrt(2.0), 1.0), (0.5, 0.125)):
        value = gskl(jnp.zeros(1), jnp.eye(1), jnp.full(1, shift), jnp.eye(1))
        np.testing.assert_allclose(value, expected, rtol=1e-13)
    # Scalars are 1-D Gaussians.
    np.testing.assert_allclose(metrics.gskl(0.0, 1.0, 0.5, 1.0), 0.125, rtol=1e-13)


def test_gskl_multivariate_matches_the_hand_formula_and_is_symmetric():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    covariance_p, covariance_q = A @ A.T + 0.3 * np.eye(3), B @ B.T + 0.3 * np.eye(3)
    mean_p, mean_q = rng.normal(size=3), rng.normal(size=3)
    value = gskl(*(jnp.asarray(a) for a in (mean_p, covariance_p, mean_q, covariance_q)))
    np.testing.assert_allclose(value, gskl_by_hand(mean_p, covariance_p, mean_q, covariance_q), rtol=1e-12)
    swapped = gskl(*(jnp.asarray(a) for a in (mean_q, covariance_q, mean_p, covariance_p)))
    np.testing.assert_allclose(swapped, value, rtol=1e-13)
    same = gskl(*(jnp.asarray(a) for a in (mean_p, covariance_p, mean_p, covariance_p)))
    np.testing.assert_allclose(same, 0.0, atol=1e-13)
    # Equal covariances: ½ δᵀΣ⁻¹δ.
    equal = gskl(*(jnp.asarray(a) for a in (mean_p, covariance_p, mean_q, covariance_p)))
    difference = mean_p - mean_q
    np.testing.assert_allclose(equal, 0.5 * difference @ np.linalg.solve(covariance_p, difference), rtol=1e-12)


@pytest.mark.parametrize("shift", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_mmtv_of_shifted_gaussians(getkey, shift):
    """TV(N(0, 1), N(δ, 1)) = 2Φ(δ/2) − 1, from 10⁵ samples of each, within 0.01."""
    first = jax.random.normal(getkey(), (100_000, 1))
    second = shift + jax.random.normal(getkey(), (100_000, 1))
    assert abs(mmtv(first, second) - (2 * ndtr(shift / 2) - 1)) < 0.01


def test_mmtv_of_identical_disjoint_and_multidimensional_samples(getkey):
    first = jax.random.normal(getkey(), (100_000, 1))
    np.testing.assert_allclose(mmtv(first, first), 0.0, atol=1e-12)
    uniform = jax.random.uniform(getkey(), (100_000, 1))
    assert mmtv(uniform, uniform + 5.0) > 0.99
    # The mean over dimensions: one identical marginal, one shifted by 2, one disjoint.
    base = jax.random.normal(getkey(), (100_000, 3))
    other = jnp.concatenate([base[:, :1], base[:, 1:2] + 2.0, base[:, 2:] + 50.0], axis=1)
    expected = (0.0 + (2 * ndtr(1.0) - 1) + 1.0) / 3
    assert abs(mmtv(base, other) - expected) < 0.01
    # Different sample sizes.
    assert abs(mmtv(first, 1.0 + jax.random.normal(getkey(), (40_000, 1))) - (2 * ndtr(0.5) - 1)) < 0.01


def test_delta_lml():
    np.testing.assert_allclose(metrics.delta_lml(-3.5, -2.0), 1.5)
    np.testing.assert_allclose(metrics.delta_lml(jnp.array(2.0), jnp.array(2.25)), 0.25)
    gradient = jax.grad(metrics.delta_lml)(jnp.array(-3.5), jnp.array(-2.0))
    np.testing.assert_allclose(gradient, -1.0)


def test_shape_errors_name_the_argument():
    with pytest.raises(ValueError, match="`mean_q`"):
        metrics.gskl(jnp.zeros(2), jnp.eye(2), jnp.zeros(3), jnp.eye(2))
    with pytest.raises(ValueError, match="`covariance_p`"):
        metrics.gskl(jnp.zeros(2), jnp.eye(3), jnp.zeros(2), jnp.eye(2))
    with pytest.raises(ValueError, match="`covariance_q`"):
        metrics.gskl(jnp.zeros(2), jnp.eye(2), jnp.zeros(2), jnp.ones(2))
    with pytest.raises(ValueError, match="`samples_p` and `samples_q`"):
        metrics.mmtv(jnp.zeros((10, 2)), jnp.zeros((10, 3)))
    with pytest.raises(ValueError, match="`samples_p` and `samples_q`"):
        metrics.mmtv(jnp.zeros(10), jnp.zeros((10, 1)))


# ---------------------------------------------------------------------------------------
# Transform matrix.
# ---------------------------------------------------------------------------------------


def _random_gaussian(key, dimension=2):
    mean_key, factor_key = jax.random.split(key)
    factor = jax.random.normal(factor_key, (dimension, dimension))
    return jax.random.normal(mean_key, (dimension,)), factor @ factor.T + 0.5 * jnp.eye(dimension)


def test_jit_traces_once_for_new_values(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def both(p, q, samples_p, samples_q, estimate, truth):
        return metrics.gskl(*p, *q), metrics.mmtv(samples_p, samples_q, 256), metrics.delta_lml(estimate, truth)

    for _ in range(3):
        outputs = both(
            _random_gaussian(getkey()),
            _random_gaussian(getkey()),
            jax.random.normal(getkey(), (500, 2)),
            jax.random.normal(getkey(), (400, 2)),
            jax.random.normal(getkey()),
            jax.random.normal(getkey()),
        )
        assert all(np.isfinite(output) for output in outputs)


def test_vmap_over_a_batch_equals_loop(getkey):
    batch = [(_random_gaussian(getkey()), _random_gaussian(getkey())) for _ in range(4)]
    stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *batch)
    samples = jax.random.normal(getkey(), (4, 2, 500, 2))
    batched_gskl = eqx.filter_jit(jax.vmap(lambda p, q: metrics.gskl(*p, *q)))(*stacked)
    batched_mmtv = eqx.filter_jit(jax.vmap(lambda s: metrics.mmtv(s[0], s[1], 256)))(samples)
    single_mmtv = eqx.filter_jit(lambda s: metrics.mmtv(s[0], s[1], 256))
    for index, (p, q) in enumerate(batch):
        np.testing.assert_allclose(batched_gskl[index], gskl(*p, *q), rtol=1e-12)
        np.testing.assert_allclose(batched_mmtv[index], single_mmtv(samples[index]), rtol=1e-12)


def test_gskl_gradient_matches_finite_differences(getkey):
    """With respect to the means and to covariances built from factors (kept symmetric)."""
    params = (jax.random.normal(getkey(), (3,)), jax.random.normal(getkey(), (3, 3)))
    params = (params, (jax.random.normal(getkey(), (3,)), jax.random.normal(getkey(), (3, 3))))

    @eqx.filter_jit
    def objective(params):
        (mean_p, factor_p), (mean_q, factor_q) = params
        return metrics.gskl(
            mean_p, factor_p @ factor_p.T + 0.5 * jnp.eye(3), mean_q, factor_q @ factor_q.T + 0.5 * jnp.eye(3)
        )

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-6, atol=1e-8
    )


def test_float32_smoke(getkey):
    p = tuple(array.astype(jnp.float32) for array in _random_gaussian(getkey()))
    q = tuple(array.astype(jnp.float32) for array in _random_gaussian(getkey()))
    samples_p = jax.random.normal(getkey(), (1000, 2), jnp.float32)
    samples_q = 0.5 + jax.random.normal(getkey(), (800, 2), jnp.float32)

    @eqx.filter_jit
    def outputs(p, q, samples_p, samples_q):
        return metrics.gskl(*p, *q), metrics.mmtv(samples_p, samples_q, 128), metrics.delta_lml(p[0][0], q[0][0])

    for output in outputs(p, q, samples_p, samples_q):
        assert output.dtype == jnp.float32
        assert np.isfinite(output)
