"""Tests of `gpcompose.sampling`: pathwise samples reproduce the exact posterior mean and
covariance (Monte Carlo tolerances from the sample size; the feature error is removed
by per-sample bases, or by comparing a shared basis with its own conditional
covariance), the noise draw is needed, and sample extrema bound a dense grid."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import gp, kernels, means, sampling

from .helpers import dense_exact_posterior, dense_kernel

NUM_SD = 4.0  # ~20 compared entries per check: a 4-SE band is a 0.1 %-level test for each (Bonferroni)


def make_posterior(key, noise=0.05, dtype=jnp.float64):
    X = jax.random.uniform(key, (6, 1), dtype)
    y = jnp.sin(6.0 * X[:, 0])
    kernel = kernels.SquaredExponential(lengthscale=jnp.asarray(0.3, dtype), variance=jnp.asarray(1.5, dtype))
    mean = means.Constant(jnp.asarray(0.2, dtype))
    return gp.condition(kernel, mean, X, y, jnp.asarray(noise, dtype)), X, y


X_TEST = np.linspace(0.0, 1.0, 5)[:, None]
NUM_MC = 20_000


@jax.jit
def values_at(samples, X):
    return samples(X)


@jax.jit
def value_and_gradient(samples, index, x):
    return jax.value_and_grad(lambda x: samples.evaluate(index, x))(x)


def sample_moment_errors(values):
    """Sample mean and covariance of `values` (M, Q) and their standard errors."""
    values = np.asarray(values)
    centred = values - values.mean(axis=0)
    products = centred[:, :, None] * centred[:, None, :]
    count = values.shape[0]
    return (
        values.mean(axis=0),
        values.std(axis=0) / np.sqrt(count),
        products.mean(axis=0),
        products.std(axis=0) / np.sqrt(count),
    )


def test_per_sample_bases_match_exact_posterior(getkey):
    # With a fresh basis per sample the sample covariance is unbiased for any F (it is
    # linear in φφᵀ, whose mean is k), so only the Monte-Carlo error remains.
    posterior, X, y = make_posterior(getkey())
    samples = sampling.pathwise(getkey(), posterior, NUM_MC, num_features=50)
    mean, mean_se, covariance, covariance_se = sample_moment_errors(values_at(samples, X_TEST))
    exact_mean, exact_covariance, _ = dense_exact_posterior(
        posterior.kernel, posterior.mean, np.asarray(X), np.asarray(y), np.full(6, 0.05), X_TEST
    )
    assert np.all(np.abs(mean - exact_mean) <= NUM_SD * mean_se)
    assert np.all(np.abs(covariance - exact_covariance) <= NUM_SD * covariance_se)


def test_shared_basis_matches_its_conditional_covariance(getkey):
    # Given one basis Φ the samples are Gaussian with covariance
    # C = ΦΦᵀ − ΦΦ_Xᵀ A k − kᵀ A Φ_X Φᵀ + kᵀ A (Φ_X Φ_Xᵀ + D) A k, A = (K + D)⁻¹;
    # C → the exact posterior covariance as F grows (error ~ 1/√F).
    posterior, X, y = make_posterior(getkey())
    samples = sampling.pathwise(getkey(), posterior, NUM_MC, num_features=20, shared_features=True)
    mean, mean_se, covariance, covariance_se = sample_moment_errors(values_at(samples, X_TEST))
    features_test = np.asarray(samples.features(jnp.asarray(X_TEST)))
    features_train = np.asarray(samples.features(X))
    K = dense_kernel(posterior.kernel, X, X)
    A = np.linalg.inv(K + 0.05 * np.eye(6))
    cross = dense_kernel(posterior.kernel, X, X_TEST)
    conditional = (
        features_test @ features_test.T
        - features_test @ features_train.T @ A @ cross
        - cross.T @ A @ features_train @ features_test.T
        + cross.T @ A @ (features_train @ features_train.T + 0.05 * np.eye(6)) @ A @ cross
    )
    exact_mean = 0.2 + cross.T @ A @ (np.asarray(y) - 0.2)
    assert np.all(np.abs(mean - exact_mean) <= NUM_SD * mean_se)
    assert np.all(np.abs(covariance - conditional) <= NUM_SD * covariance_se)


def test_without_noise_draw_variance_is_too_small(getkey):
    # Dropping ε (as the document's eq. 17 does) removes kᵀA D A k from the covariance.
    posterior, X, y = make_posterior(getkey(), noise=0.3)
    samples = sampling.pathwise(getkey(), posterior, NUM_MC, num_features=50)
    residual = (
        np.asarray(y) - 0.2 - np.einsum("mcf,mf->mc", jax.vmap(lambda f: f(X))(samples.features), samples.prior_weights)
    )
    K = dense_kernel(posterior.kernel, X, X)
    noiseless_weights = np.linalg.solve(K + 0.3 * np.eye(6), residual.T).T
    noiseless = sampling.PathwiseSamples(
        posterior, samples.features, samples.prior_weights, jnp.asarray(noiseless_weights), False
    )
    _, exact_covariance, _ = dense_exact_posterior(
        posterior.kernel, posterior.mean, np.asarray(X), np.asarray(y), np.full(6, 0.3), X_TEST
    )
    _, _, covariance, covariance_se = sample_moment_errors(values_at(samples, X_TEST))
    _, _, biased, biased_se = sample_moment_errors(values_at(noiseless, X_TEST))
    exact_variance = np.diag(exact_covariance)
    assert np.all(np.abs(np.diag(covariance) - exact_variance) <= NUM_SD * np.diag(covariance_se))
    assert np.all(np.diag(biased) < exact_variance - NUM_SD * np.diag(biased_se))


def test_evaluate_jit_vmap_grad_and_float32(getkey):
    posterior, X, y = make_posterior(getkey())
    key = getkey()

    def draw_values(key, X_new):
        samples = sampling.pathwise(key, posterior, 3, num_features=30)
        return samples(X_new), jax.vmap(samples.evaluate, in_axes=(0, None))(jnp.arange(3), X_new[1])

    draw = jax.jit(eqx.debug.assert_max_traces(draw_values, max_traces=1))
    values, single = draw(key, jnp.asarray(X_TEST))
    draw(getkey(), jnp.asarray(X_TEST) + 0.1)
    np.testing.assert_allclose(single, values[:, 1], rtol=1e-12)
    keys = jax.random.split(getkey(), 3)
    batched = jax.vmap(lambda k: draw_values(k, jnp.asarray(X_TEST))[0])(keys)
    looped = np.stack([draw(k, jnp.asarray(X_TEST))[0] for k in keys])
    np.testing.assert_allclose(batched, looped, rtol=1e-10, atol=1e-12)
    samples = sampling.pathwise(key, posterior, 3, num_features=30)
    x = jnp.asarray([0.37])
    step = 1e-6
    _, gradient = value_and_gradient(samples, 1, x)
    upper, _ = value_and_gradient(samples, 1, x + step)
    lower, _ = value_and_gradient(samples, 1, x - step)
    np.testing.assert_allclose(gradient[0], (upper - lower) / (2 * step), rtol=1e-6)
    posterior32, _, _ = make_posterior(getkey(), dtype=jnp.float32)
    values32 = values_at(sampling.pathwise(getkey(), posterior32, 3, num_features=30), jnp.asarray(X_TEST, jnp.float32))
    assert values32.dtype == jnp.float32 and np.all(np.isfinite(values32))


def test_extrema_bound_a_dense_grid(getkey):
    posterior, X, y = make_posterior(getkey())
    samples = sampling.pathwise(getkey(), posterior, 8, num_features=100)
    extrema = sampling.sample_extrema(getkey(), samples, jnp.zeros(1), jnp.ones(1), num_candidates=64, num_starts=3)
    grid = jnp.linspace(0.0, 1.0, 2001)[:, None]
    values = np.asarray(values_at(samples, grid))
    tolerance = 1e-6
    assert np.all(np.asarray(extrema.value_max) >= values.max(axis=1) - tolerance)
    assert np.all(np.asarray(extrema.value_min) <= values.min(axis=1) + tolerance)
    at_max = jax.vmap(samples.evaluate)(jnp.arange(8), extrema.x_max)
    np.testing.assert_allclose(at_max, extrema.value_max, rtol=1e-12)
    assert np.all((np.asarray(extrema.x_max) >= 0) & (np.asarray(extrema.x_max) <= 1))
    assert extrema.value_max.dtype == extrema.x_min.dtype == jnp.float64


def test_the_single_precision_search_finds_the_double_precision_extrema(getkey):
    """The default search runs in float32 (polynomial cosines) and evaluates its end points
    with the samples themselves: the extrema it returns agree with a float64 search from the
    same candidates, and are the samples' values at the returned points."""
    posterior, X, y = make_posterior(getkey())
    samples = sampling.pathwise(getkey(), posterior, 8, num_features=100)
    key = getkey()
    box = (jnp.zeros(1), jnp.ones(1))
    single = sampling.sample_extrema(key, samples, *box, num_candidates=64, num_starts=3)
    double = sampling.sample_extrema(key, samples, *box, num_candidates=64, num_starts=3, search_dtype=jnp.float64)
    np.testing.assert_allclose(single.value_max, double.value_max, atol=1e-6)
    np.testing.assert_allclose(single.value_min, double.value_min, atol=1e-6)
    at_min = jax.vmap(samples.evaluate)(jnp.arange(8), single.x_min)
    np.testing.assert_allclose(at_min, single.value_min, rtol=1e-12)


def test_extrema_are_stationary_or_held_at_a_face(getkey):
    """After the Newton polish every maximiser inside the box has a derivative below 10⁻⁶
    (about 10⁻³ after the Adam steps alone) and one on a face a derivative pointing out of
    the box; minimisers likewise."""
    posterior, X, y = make_posterior(getkey())
    samples = sampling.pathwise(getkey(), posterior, 8, num_features=100)
    extrema = sampling.sample_extrema(getkey(), samples, jnp.zeros(1), jnp.ones(1), num_candidates=64, num_starts=3)
    for points, sign in ((extrema.x_max, 1.0), (extrema.x_min, -1.0)):
        gradients = np.asarray(jax.vmap(lambda i, x: value_and_gradient(samples, i, x)[1])(jnp.arange(8), points))
        x, ascent = np.asarray(points)[:, 0], sign * gradients[:, 0]
        inside = (x > 0.0) & (x < 1.0)
        assert np.all(np.abs(ascent[inside]) < 1e-6)
        assert np.all(ascent[x == 0.0] <= 0.0) and np.all(ascent[x == 1.0] >= 0.0)


def test_bad_input_is_rejected(getkey):
    posterior, X, y = make_posterior(getkey())
    periodic = gp.condition(kernels.Periodic(), means.Zero(), X, y, 0.1)
    with pytest.raises(ValueError, match="spectral density"):
        sampling.pathwise(getkey(), periodic, 2)
    with pytest.raises(ValueError, match="`posterior`"):
        sampling.pathwise(getkey(), (X, y), 2)
    samples = sampling.pathwise(getkey(), posterior, 3, num_features=30)
    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        sampling.sample_extrema(getkey(), samples, jnp.ones(1), jnp.zeros(1))
    with pytest.raises(ValueError, match="`search_dtype`"):
        sampling.sample_extrema(getkey(), samples, jnp.zeros(1), jnp.ones(1), search_dtype=jnp.int32)
    with pytest.raises(ValueError, match="`newton_steps`"):
        sampling.sample_extrema(getkey(), samples, jnp.zeros(1), jnp.ones(1), newton_steps=-1)
    with pytest.raises(ValueError, match="`X`"):
        samples(jnp.zeros((3, 2)))
