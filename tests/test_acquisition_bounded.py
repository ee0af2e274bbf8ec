"""Tests of the BO acquisition functions: the closed-form BES against a brute-force
evaluation of the document's eq. 9 (dense refit for σ_x², scipy log densities, average
over y_x draws), log-EI/log-ERM against the closed form and far in the tail, UCB, MES
against truncated-normal entropies, and the box maximiser."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from gpcompose import acquisition, gp, kernels, means

from .helpers import dense_exact_posterior

NOISE = 1e-2


def make_posterior(key, dtype=jnp.float64):
    X = jax.random.uniform(key, (5, 1), dtype)
    y = jnp.sin(6.0 * X[:, 0])
    kernel = kernels.SquaredExponential(lengthscale=jnp.asarray(0.2, dtype), variance=jnp.asarray(1.0, dtype))
    return gp.condition(kernel, means.Zero(), X, y, jnp.asarray(NOISE, dtype)), X, y


def make_cache(posterior, x_max, value_max, log_weights):
    mean, variance = gp.predict(posterior, x_max)
    return acquisition.BoundedEntropySearchCache(x_max, value_max, log_weights, mean, variance)


def bes(posterior, cache, x):
    lookahead = gp.lookahead_variance(posterior, cache.x_max, x, jnp.asarray(NOISE, x.dtype))
    return acquisition.bounded_entropy_search(cache, lookahead)


X_MAX = jnp.asarray([[0.1], [0.35], [0.6], [0.9]])
VALUE_MAX = jnp.asarray([1.1, 0.9, 1.4, 1.2])
LOG_WEIGHTS = jnp.asarray([-0.3, -2.0, -0.1, -1.0])


def test_bes_equals_brute_force_eq9(getkey):
    posterior, X, y = make_posterior(getkey())
    cache = make_cache(posterior, X_MAX, VALUE_MAX, LOG_WEIGHTS)
    weights = np.exp(LOG_WEIGHTS) / np.exp(LOG_WEIGHTS).sum()
    rng = np.random.default_rng(1)
    for x in (0.2, 0.5, 0.62):
        x_new = np.array([[x]])
        mean_x, covariance_x, _ = dense_exact_posterior(
            posterior.kernel, posterior.mean, np.asarray(X), np.asarray(y), np.full(5, NOISE), x_new
        )
        mean, covariance, _ = dense_exact_posterior(
            posterior.kernel, posterior.mean, np.asarray(X), np.asarray(y), np.full(5, NOISE), np.asarray(X_MAX)
        )
        estimates = []
        for y_x in mean_x[0] + np.sqrt(covariance_x[0, 0] + NOISE) * rng.normal(size=8):
            X_more = np.concatenate([np.asarray(X), x_new])
            y_more = np.append(np.asarray(y), y_x)
            _, refit, _ = dense_exact_posterior(
                posterior.kernel, posterior.mean, X_more, y_more, np.full(6, NOISE), np.asarray(X_MAX)
            )
            # eq. 9 with eqs. 10–11 and the document's μ_x ≈ μ
            log_after = np.log(weights) + stats.norm(mean, np.sqrt(np.diag(refit))).logpdf(VALUE_MAX)
            log_before = np.log(weights) + stats.norm(mean, np.sqrt(np.diag(covariance))).logpdf(VALUE_MAX)
            estimates.append(np.mean(np.exp(log_after) * (log_after - log_before)))
        np.testing.assert_allclose(bes(posterior, cache, jnp.asarray([x])), np.mean(estimates), rtol=1e-8)


def test_bes_drops_minus_infinity_weights_and_targets_the_maximiser(getkey):
    posterior, X, y = make_posterior(getkey())
    x = jnp.asarray([0.45])
    dropped = make_cache(posterior, X_MAX, VALUE_MAX, LOG_WEIGHTS.at[2].set(-jnp.inf))
    keep = jnp.asarray([0, 1, 3])
    reduced = make_cache(posterior, X_MAX[keep], VALUE_MAX[keep], LOG_WEIGHTS[keep])
    np.testing.assert_allclose(4 * bes(posterior, dropped, x), 3 * bes(posterior, reduced, x), rtol=1e-12)
    # one sample: α peaks at (or next to) its maximiser
    single = make_cache(posterior, X_MAX[2:3], VALUE_MAX[2:3], LOG_WEIGHTS[2:3])
    grid = jnp.linspace(0.0, 1.0, 401)[:, None]
    values = jax.jit(jax.vmap(lambda x: bes(posterior, single, x)))(grid)
    assert abs(float(grid[jnp.argmax(values), 0]) - 0.6) < 0.03


def test_bes_transforms(getkey):
    posterior, X, y = make_posterior(getkey())
    cache = make_cache(posterior, X_MAX, VALUE_MAX, LOG_WEIGHTS)

    def value(x):
        return bes(posterior, cache, x)

    jitted = jax.jit(eqx.debug.assert_max_traces(value, max_traces=1))
    points = jnp.asarray([[0.2], [0.5], [0.75]])
    looped = np.asarray([jitted(x) for x in points])
    np.testing.assert_allclose(jax.vmap(value)(points), looped, rtol=1e-12)
    assert np.all(np.isfinite(looped))
    gradient = jax.jit(jax.grad(value))
    step = 1e-6
    for x in points:
        difference = (jitted(x + step) - jitted(x - step)) / (2 * step)
        np.testing.assert_allclose(gradient(x)[0], difference, rtol=1e-5, atol=1e-10)
    posterior32, _, _ = make_posterior(getkey(), jnp.float32)
    cache32 = make_cache(
        posterior32, X_MAX.astype(jnp.float32), VALUE_MAX.astype(jnp.float32), LOG_WEIGHTS.astype(jnp.float32)
    )
    value32 = bes(posterior32, cache32, jnp.asarray([0.5], jnp.float32))
    assert value32.dtype == jnp.float32 and np.isfinite(value32)


def test_log_expected_improvement_closed_form_and_tail():
    mean = np.linspace(-3.0, 3.0, 13)
    variance = np.full(13, 0.49)
    best = 0.4
    sd = np.sqrt(variance)
    z = (mean - best) / sd
    closed = (mean - best) * stats.norm.cdf(z) + sd * stats.norm.pdf(z)
    log_ei = jax.jit(acquisition.log_expected_improvement)
    np.testing.assert_allclose(np.exp(log_ei(jnp.asarray(mean), jnp.asarray(variance), best)), closed, rtol=1e-10)
    log_h = jax.jit(acquisition.log_improvement_factor)
    # the middle branch against the direct formula where float64 still resolves it
    z_middle = np.linspace(-7.5, -1.0, 14)
    direct = np.log(stats.norm.pdf(z_middle) + z_middle * stats.norm.cdf(z_middle))
    np.testing.assert_allclose(log_h(jnp.asarray(z_middle)), direct, rtol=1e-9)
    # the tail against quadrature: h(z) = φ(z)/z² ∫₀^∞ v e^{−v − v²/(2z²)} dv for z < 0
    z_tail = np.array([-3.0, -20.0, -43.0, -45.0, -1e3, -1e6, -1e9])
    integrals = [
        integrate.quad(lambda v, z=z: v * np.exp(-v - v**2 / (2 * z**2)), 0, np.inf, epsabs=0, epsrel=1e-13)[0]
        for z in z_tail
    ]
    reference = -0.5 * z_tail**2 - 0.5 * math.log(2 * math.pi) - 2 * np.log(-z_tail) + np.log(integrals)
    np.testing.assert_allclose(log_h(jnp.asarray(z_tail)), reference, rtol=1e-12, atol=1e-10)
    # smooth across the branch boundaries
    gradient = jax.jit(jax.vmap(jax.grad(acquisition.log_improvement_factor)))
    for boundary in (-1.0, -((10395 / np.finfo(np.float64).eps) ** (1 / 12))):
        points = jnp.asarray([boundary * (1 + 1e-7), boundary * (1 - 1e-7)])
        values = log_h(points)
        slope = (values[1] - values[0]) / (points[1] - points[0])
        np.testing.assert_allclose(gradient(points), [slope, slope], rtol=1e-4)
    value32 = acquisition.log_expected_improvement(jnp.float32(-50.0), jnp.float32(0.25), jnp.float32(0.0))
    assert value32.dtype == jnp.float32 and np.isfinite(value32)


def test_expected_regret_ucb_and_mes():
    mean, variance, optimum = np.array([0.2, 1.1, -0.5]), np.array([0.3, 0.05, 1.2]), 1.3
    sd = np.sqrt(variance)
    z = (optimum - mean) / sd
    regret = (optimum - mean) * stats.norm.cdf(z) + sd * stats.norm.pdf(z)
    np.testing.assert_allclose(
        np.exp(acquisition.log_expected_regret(jnp.asarray(mean), jnp.asarray(variance), optimum)), regret, rtol=1e-10
    )
    draws = mean + sd * np.random.default_rng(0).standard_normal((400_000, 3))
    shortfall = np.maximum(optimum - draws, 0.0)  # ERM = E max(f* − f, 0) by Monte Carlo
    standard_error = shortfall.std(axis=0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(shortfall.mean(axis=0) - regret) < 4 * standard_error)
    np.testing.assert_allclose(
        acquisition.upper_confidence_bound(jnp.asarray(mean), jnp.asarray(variance), 2.0),
        mean + np.sqrt(2.0 * variance),
        rtol=1e-12,
    )
    # MES = E_{y*}[H(N(μ, σ²)) − H(N(μ, σ²) truncated above at y*)]
    max_values = np.array([0.9, 1.4, 2.5])
    entropy = stats.norm(0.6, np.sqrt(0.4)).entropy()
    truncated = [stats.truncnorm(-40.0, (m - 0.6) / np.sqrt(0.4), 0.6, np.sqrt(0.4)).entropy() for m in max_values]
    np.testing.assert_allclose(
        acquisition.max_value_entropy_search(jnp.asarray(0.6), jnp.asarray(0.4), jnp.asarray(max_values)),
        np.mean(entropy - np.asarray(truncated)),
        rtol=1e-9,
    )


def test_maximize_on_box(getkey):
    lower, upper = jnp.asarray([0.0, -1.0]), jnp.asarray([1.0, 1.0])

    def objective(centre):
        return lambda x: -jnp.sum((x - centre) ** 2)

    inside = acquisition.maximize_on_box(getkey(), objective(jnp.asarray([0.3, 0.2])), lower, upper, num_steps=200)
    np.testing.assert_allclose(inside.x, [0.3, 0.2], atol=1e-3)
    outside = acquisition.maximize_on_box(getkey(), objective(jnp.asarray([1.5, 0.2])), lower, upper, num_steps=200)
    np.testing.assert_allclose(outside.x, [1.0, 0.2], atol=1e-3)
    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        acquisition.maximize_on_box(getkey(), objective(jnp.zeros(2)), upper, lower)
