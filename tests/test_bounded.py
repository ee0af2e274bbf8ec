"""Tests of `gpcompose.bounded`: log weights against scipy's Gaussian densities,
acceptance rules, the weighted estimate (and its η → ∞ limit), the square-root GP's
round trip, upper bound, clamping guard, prior centres, moment-matched predictive against Monte Carlo,
look-ahead variance against a dense refit, and bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from gpcompose import bounded, gp, kernels, sampling

from .helpers import dense_exact_posterior


def extrema(value_max, value_min):
    value_max = jnp.asarray(value_max)
    x = jnp.zeros((value_max.shape[0], 1))
    return sampling.SampleExtrema(x, value_max, x, jnp.asarray(value_min))


@jax.jit
def values_at(samples, X):
    return samples(X)


VALUE_MAX = np.array([1.0, 1.3, 0.2, 2.9])
VALUE_MIN = np.array([-1.0, -0.1, -2.5, -0.9])


def test_log_weights_are_gaussian_log_densities():
    both = bounded.Bounds(f_plus=1.2, f_minus=-0.8, eta_plus=0.3, eta_minus=0.7)
    expected = stats.multivariate_normal([-0.8, 1.2], np.diag([0.7**2, 0.3**2])).logpdf(
        np.stack([VALUE_MIN, VALUE_MAX], axis=1)
    )
    np.testing.assert_allclose(bounded.log_weights(both, extrema(VALUE_MAX, VALUE_MIN)), expected, rtol=1e-12)
    upper_only = bounded.Bounds(f_plus=1.2, eta_plus=0.3)
    np.testing.assert_allclose(
        bounded.log_weights(upper_only, extrema(VALUE_MAX, VALUE_MIN)),
        stats.norm(1.2, 0.3).logpdf(VALUE_MAX),
        rtol=1e-12,
    )
    lower_only = bounded.Bounds(f_minus=-0.8, eta_minus=0.7)
    np.testing.assert_allclose(
        bounded.log_weights(lower_only, extrema(VALUE_MAX, VALUE_MIN)),
        stats.norm(-0.8, 0.7).logpdf(VALUE_MIN),
        rtol=1e-12,
    )


def test_acceptance_rules():
    bounds = bounded.Bounds(f_plus=1.0, f_minus=-1.0, eta_plus=0.2, eta_minus=0.5)
    # standardised distances (max, min): (0, 0), (1.5, 1.8), (-4, -3), (9.5, 0.2)
    coordinate = bounded.accepted(bounds, extrema(VALUE_MAX, VALUE_MIN))
    np.testing.assert_array_equal(coordinate, [True, True, False, False])
    # Mahalanobis radius of (1.5, 1.8) is 2.34 > 2: rejected by the joint rule only.
    mahalanobis = bounded.accepted(bounds, extrema(VALUE_MAX, VALUE_MIN), rule="mahalanobis")
    np.testing.assert_array_equal(mahalanobis, [True, False, False, False])
    upper_only = bounded.Bounds(f_plus=1.0, eta_plus=0.2)
    np.testing.assert_array_equal(
        bounded.accepted(upper_only, extrema(VALUE_MAX, VALUE_MIN)),
        bounded.accepted(upper_only, extrema(VALUE_MAX, VALUE_MIN), rule="mahalanobis"),
    )
    with pytest.raises(ValueError, match="`rule`"):
        bounded.accepted(bounds, extrema(VALUE_MAX, VALUE_MIN), rule="box")


def problem(key, num_points=6):
    X = jax.random.uniform(key, (num_points, 1))
    y = jnp.sin(6.0 * X[:, 0])
    kernel = kernels.SquaredExponential(lengthscale=0.25, variance=0.8)
    return kernel, X, y


def test_weighted_mean_and_uniform_limit(getkey):
    kernel, X, y = problem(getkey())
    posterior = bounded.condition_square_root(kernel, X, y, 1e-3, 1.5)
    samples = bounded.square_root_pathwise(getkey(), posterior, 16, num_features=30)
    found = sampling.sample_extrema(getkey(), samples, jnp.zeros(1), jnp.ones(1), num_candidates=32, num_starts=2)
    grid = jnp.linspace(0.0, 1.0, 1001)[:, None]
    values = np.asarray(values_at(samples, grid))
    log_weights = bounded.log_weights(bounded.Bounds(f_plus=1.0, eta_plus=0.2), found)
    weights = np.exp(np.asarray(log_weights) - np.max(log_weights))
    np.testing.assert_allclose(
        bounded.weighted_mean(samples, log_weights, grid), weights @ values / weights.sum(), rtol=1e-10
    )
    np.testing.assert_allclose(
        bounded.weighted_mean(samples, log_weights + 3.0, grid), bounded.weighted_mean(samples, log_weights, grid)
    )
    loose = bounded.log_weights(bounded.Bounds(f_plus=1.0, f_minus=-1.0, eta_plus=1e8, eta_minus=1e8), found)
    np.testing.assert_allclose(bounded.weighted_mean(samples, loose, grid), values.mean(axis=0), rtol=1e-10)
    # every square-root sample stays below c on a dense grid, exactly
    assert np.all(values <= 1.5)
    assert np.all(np.asarray(found.value_max) <= 1.5)


def test_square_root_round_trip_and_clamping(getkey):
    kernel, X, y = problem(getkey())
    offset = 1.4
    h, clamped = bounded._square_root.square_root_targets(y, jnp.asarray(offset), jnp.ones(6, bool))
    np.testing.assert_allclose(offset - 0.5 * h**2, y, rtol=1e-12, atol=1e-14)
    assert int(clamped) == 0
    high = y.at[2].set(offset + 0.5)
    posterior = bounded.condition_square_root(kernel, X, high, 1e-3, offset)
    assert int(posterior.num_clamped) == 1
    mean, variance = bounded.predict_linearized(posterior, X)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(variance))
    assert np.all(np.asarray(mean) <= offset)


def test_moment_matching_against_monte_carlo(getkey):
    kernel, X, y = problem(getkey(), num_points=4)
    posterior = bounded.condition_square_root(kernel, X, y, 1e-2, 1.6)
    X_test = jnp.linspace(0.0, 1.0, 5)[:, None]
    root_mean, root_variance = gp.predict(posterior.root, X_test)
    count = 400_000
    h = np.asarray(root_mean) + np.sqrt(np.asarray(root_variance)) * np.random.default_rng(0).normal(size=(count, 5))
    f = 1.6 - 0.5 * h**2
    mc_mean, mc_variance = f.mean(axis=0), f.var(axis=0)
    mean_se = f.std(axis=0) / np.sqrt(count)
    variance_se = np.sqrt(((f - mc_mean) ** 2).var(axis=0) / count)
    matched_mean, matched_variance = bounded.predict_moment_matched(posterior, X_test)
    assert np.all(np.abs(matched_mean - mc_mean) <= 4 * mean_se)
    assert np.all(np.abs(matched_variance - mc_variance) <= 4 * variance_se)
    # the linearisation (document eqs. 6–7) is the first-order part: mean off by −½σ_h²
    linear_mean, linear_variance = bounded.predict_linearized(posterior, X_test)
    np.testing.assert_allclose(matched_mean - linear_mean, -0.5 * root_variance, rtol=1e-12)
    np.testing.assert_allclose(matched_variance - linear_variance, 0.5 * root_variance**2, rtol=1e-12)


def test_root_prior_centres_far_from_the_data(getkey):
    # Far from the data h has its prior N(m_h, k(x, x)), so the exact mean of f = c − ½h² is
    # c − ½(m_h² + k): "data" (m_h = √(2c)) centres f at 0 − ½k, "bound" (m_h = 0) at c − ½k.
    kernel, X, y = problem(getkey())
    offset = 1.4
    far = jnp.asarray([[40.0]])
    for center, expected in (("data", -0.5 * 0.8), ("bound", offset - 0.5 * 0.8)):
        mean = bounded.root_prior_mean(jnp.asarray(offset), center)
        posterior = bounded.condition_square_root(kernel, X, y, 1e-3, offset, mean=mean)
        matched_mean, _ = bounded.predict_moment_matched(posterior, far)
        np.testing.assert_allclose(matched_mean, [expected], rtol=1e-10)
    default = bounded.condition_square_root(kernel, X, y, 1e-3, offset)
    np.testing.assert_allclose(bounded.predict_moment_matched(default, far)[0], [-0.4], rtol=1e-10)
    with pytest.raises(ValueError, match="`center`"):
        bounded.root_prior_mean(jnp.asarray(offset), "middle")


def test_square_root_lookahead_equals_refit(getkey):
    kernel, X, y = problem(getkey(), num_points=5)
    posterior = bounded.condition_square_root(kernel, X, y, 1e-2, 1.6)
    X_query = jnp.asarray([[0.1], [0.45], [0.8]])
    x = jnp.asarray([0.5])
    lookahead = bounded.square_root_lookahead_variance(posterior, X_query, x, 1e-2)
    X_more = np.concatenate([np.asarray(X), [[0.5]]])
    h = np.asarray(posterior.root.observations.targets)
    _, refit_covariance, _ = dense_exact_posterior(
        kernel, posterior.root.mean, X_more, np.append(h, 0.0), np.full(6, 1e-2), np.asarray(X_query)
    )
    root_mean, _ = gp.predict(posterior.root, X_query)
    np.testing.assert_allclose(lookahead, root_mean**2 * np.diag(refit_covariance), rtol=1e-8)


def test_bad_bounds_are_rejected():
    with pytest.raises(ValueError, match="`f_minus`.*smaller"):
        bounded.Bounds(f_plus=0.0, f_minus=1.0, eta_plus=0.1, eta_minus=0.1)
    with pytest.raises(ValueError, match="`eta_plus` must be strictly positive"):
        bounded.Bounds(f_plus=0.0, eta_plus=0.0)
    with pytest.raises(ValueError, match="without its looseness `eta_minus`"):
        bounded.Bounds(f_minus=0.0)
    with pytest.raises(ValueError, match="needs `f_plus`"):
        bounded.Bounds()
    with pytest.raises(ValueError, match="needs an upper bound"):
        bounded.square_root_offset(bounded.Bounds(f_minus=0.0, eta_minus=1.0))

    @eqx.filter_jit
    def traced(eta):
        return bounded.log_weights(bounded.Bounds(f_plus=1.0, eta_plus=eta), extrema(VALUE_MAX, VALUE_MIN))

    assert np.all(np.isfinite(traced(0.5)))
    with pytest.raises(Exception, match="η > 0"):
        traced(-0.5)
