"""Bounded ↔ unbounded transforms and push-forward mixtures, against autodiff Jacobians,
closed forms and dense quadrature."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from gpcompose import mixtures, transforms

KINDS = ("probit", "logit")
# Two-sided, lower-only, upper-only and unbounded coordinates.
LOWER = np.array([-1.0, 0.5, -np.inf, -np.inf])
UPPER = np.array([2.0, np.inf, 3.0, np.inf])

# Jitted entry points (the methods are plain functions; calling them eagerly dispatches op by op).
to_unbounded = eqx.filter_jit(lambda transform, x: transform.to_unbounded(x))
from_unbounded = eqx.filter_jit(lambda transform, u: transform.from_unbounded(u))
log_abs_det_jacobian = eqx.filter_jit(lambda transform, u: transform.log_abs_det_jacobian(u))
log_prob = eqx.filter_jit(lambda density, x: density.log_prob(x))
sample = eqx.filter_jit(lambda density, key, num_samples: density.sample(key, num_samples))


@pytest.mark.parametrize("kind", KINDS)
def test_round_trips(kind, getkey):
    transform = transforms.BoundedTransform(LOWER, UPPER, kind=kind)
    u = jnp.clip(1.5 * jax.random.normal(getkey(), (500, 4)), -5.0, 5.0)
    np.testing.assert_allclose(to_unbounded(transform, from_unbounded(transform, u)), u, atol=1e-8)
    uniform = jax.random.uniform(getkey(), (500, 4))
    x = jnp.stack(
        [-1.0 + 3.0 * uniform[:, 0], 0.5 + 10.0 * uniform[:, 1], 3.0 - 10.0 * uniform[:, 2], 20.0 * uniform[:, 3] - 10],
        axis=1,
    )
    np.testing.assert_allclose(from_unbounded(transform, to_unbounded(transform, x)), x, rtol=1e-12, atol=1e-13)


def whitened_transform():
    """Bounded coordinates of every kind, then w = L⁻¹(u − m) with a dense lower-triangular L."""
    factor = np.tril(np.array([[1.2, 0, 0, 0], [0.5, 0.7, 0, 0], [-0.3, 0.2, 2.0, 0], [0.1, -0.8, 0.4, 0.5]]))
    shift = np.array([0.2, 1.0, -0.5, 3.0])
    return transforms.WhitenedTransform(
        transforms.BoundedTransform(LOWER, UPPER), jnp.asarray(shift), jnp.asarray(factor)
    )


def test_whitened_transform_round_trip_and_log_jacobian_match_autodiff(getkey):
    transform = whitened_transform()
    w = jnp.clip(jax.random.normal(getkey(), (200, 4)), -3.0, 3.0)
    np.testing.assert_allclose(to_unbounded(transform, from_unbounded(transform, w)), w, atol=1e-9)
    jacobian = eqx.filter_jit(lambda transform, w: jax.vmap(jax.jacfwd(transform.from_unbounded))(w))
    expected = np.linalg.slogdet(np.asarray(jacobian(transform, w)))[1]
    np.testing.assert_allclose(log_abs_det_jacobian(transform, w), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(transform.unwhiten(transform.whiten(w)), w, atol=1e-12)


def test_identity_whitening_is_the_bounded_transform(getkey):
    bounded = transforms.BoundedTransform(LOWER, UPPER)
    identity = transforms.WhitenedTransform.identity(bounded)
    u = jax.random.normal(getkey(), (100, 4))
    np.testing.assert_array_equal(from_unbounded(identity, u), from_unbounded(bounded, u))
    np.testing.assert_array_equal(log_abs_det_jacobian(identity, u), log_abs_det_jacobian(bounded, u))
    with pytest.raises(ValueError, match="`shift` must have shape"):
        transforms.WhitenedTransform(bounded, jnp.zeros(3), jnp.eye(4))


@pytest.mark.parametrize("kind", KINDS)
def test_closed_forms(kind, getkey):
    transform = transforms.BoundedTransform(LOWER, UPPER, kind=kind)
    u = jax.random.normal(getkey(), (50, 4))
    x = from_unbounded(transform, u)
    cumulative = stats.norm.cdf(u[:, 0]) if kind == "probit" else 1 / (1 + np.exp(-u[:, 0]))
    np.testing.assert_allclose(x[:, 0], -1.0 + 3.0 * cumulative, rtol=1e-12)
    np.testing.assert_allclose(x[:, 1], 0.5 + np.exp(u[:, 1]), rtol=1e-12)
    np.testing.assert_allclose(x[:, 2], 3.0 - np.exp(u[:, 2]), rtol=1e-12)
    np.testing.assert_array_equal(x[:, 3], u[:, 3])


@pytest.mark.parametrize("kind", KINDS)
def test_log_jacobian_matches_autodiff(kind, getkey):
    transform = transforms.BoundedTransform(LOWER, UPPER, kind=kind)
    points = jnp.concatenate([jax.random.normal(getkey(), (4, 4)), jnp.array([[-5.0, 4.0, -3.0, 7.0]])])
    jacobian = eqx.filter_jit(lambda transform, u: jax.vmap(jax.jacfwd(transform.from_unbounded))(u))
    jacobians = np.asarray(jacobian(transform, points))
    diagonals = np.diagonal(jacobians, axis1=1, axis2=2)
    np.testing.assert_array_equal(jacobians - diagonals[:, :, None] * np.eye(4), 0.0)
    expected = np.sum(np.log(np.abs(diagonals)), axis=1)
    np.testing.assert_allclose(log_abs_det_jacobian(transform, points), expected, rtol=1e-10)
    batch = log_abs_det_jacobian(transform, points[None].repeat(2, axis=0))
    assert batch.shape == (2, 5)


@pytest.mark.parametrize("dtype", (jnp.float32, jnp.float64))
@pytest.mark.parametrize("kind", KINDS)
def test_extreme_unbounded_values_stay_finite(kind, dtype):
    transform = transforms.BoundedTransform(LOWER.astype(dtype), UPPER.astype(dtype), kind=kind)
    u = jnp.array([[30.0, 30.0, 30.0, 30.0], [-30.0, -30.0, -30.0, -30.0]], dtype)
    x = from_unbounded(transform, u)
    assert x.dtype == dtype
    x = np.asarray(x, np.float64)
    assert np.all(np.isfinite(x))
    assert np.all((x >= LOWER) & (x <= UPPER))
    log_jacobian = log_abs_det_jacobian(transform, u)
    assert log_jacobian.dtype == dtype and np.all(np.isfinite(log_jacobian))
    two_sided = -0.5 * 900 - 0.5 * np.log(2 * np.pi) if kind == "probit" else -30.0
    np.testing.assert_allclose(log_jacobian, np.log(3.0) + two_sided + np.array([60.0, -60.0]), rtol=1e-5)
    objective = lambda u: jnp.sum(transform.log_abs_det_jacobian(u)) + jnp.sum(transform.from_unbounded(u))
    gradient = jax.jit(jax.grad(objective))(u)
    assert np.all(np.isfinite(gradient))


@pytest.mark.parametrize("dtype", (jnp.float32, jnp.float64))
@pytest.mark.parametrize("kind", KINDS)
def test_unbounded_limits_map_strictly_inside_and_beyond_them_x_reaches_the_bound(kind, dtype):
    """At the limits x(u) is strictly inside the box and u(x(u)) finite; for the finite
    bounds at a non-zero value (−1, 2, 0.5, 3) a step of 16 beyond the limit rounds x onto
    the bound. A bound at 0 (second box) keeps x > 0 down to √tiny."""
    for lower, upper in ((LOWER, UPPER), (np.array([0.01, 0.0]), np.array([0.5, 1.0]))):
        transform = transforms.BoundedTransform(lower.astype(dtype), upper.astype(dtype), kind=kind)
        u_min, u_max = eqx.filter_jit(lambda t: t.unbounded_limits())(transform)
        assert u_min.dtype == dtype and u_max.dtype == dtype
        np.testing.assert_array_equal(np.isfinite(u_min), np.isfinite(lower) | np.isfinite(upper))
        np.testing.assert_array_equal(np.isfinite(u_max), np.isfinite(lower) & np.isfinite(upper))
        for limit in (u_min, u_max):
            u = jnp.where(jnp.isfinite(limit), limit, 0.0)
            x = from_unbounded(transform, u)
            assert np.all((np.asarray(x) > lower.astype(dtype)) & (np.asarray(x) < upper.astype(dtype)))
            assert np.all(np.isfinite(np.asarray(to_unbounded(transform, x))))
    transform = transforms.BoundedTransform(LOWER.astype(dtype), UPPER.astype(dtype), kind=kind)
    u_min, u_max = transform.unbounded_limits()
    below = from_unbounded(transform, jnp.where(jnp.isfinite(u_min), u_min - 16.0, 0.0))
    above = from_unbounded(transform, jnp.where(jnp.isfinite(u_max), u_max + 16.0, 0.0))
    np.testing.assert_array_equal(np.asarray(below)[:3], np.array([LOWER[0], LOWER[1], UPPER[2]], dtype))
    assert float(above[0]) == UPPER[0]


def test_float32_round_trip(getkey):
    transform = transforms.BoundedTransform(LOWER.astype(np.float32), UPPER.astype(np.float32))
    u = jnp.clip(jax.random.normal(getkey(), (100, 4), jnp.float32), -3.0, 3.0)
    back = to_unbounded(transform, from_unbounded(transform, u))
    assert back.dtype == jnp.float32
    np.testing.assert_allclose(back, u, atol=2e-3)


def test_bad_bounds_raise_naming_the_argument():
    with pytest.raises(ValueError, match="lower_bounds"):
        transforms.BoundedTransform([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="upper_bounds"):
        transforms.BoundedTransform([0.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="lower_bounds"):
        transforms.BoundedTransform(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="kind"):
        transforms.BoundedTransform([0.0], [1.0], kind="tanh")
    with pytest.raises(Exception, match="lower_bounds"):
        eqx.filter_jit(transforms.BoundedTransform)(jnp.array([2.0]), jnp.array([1.0]))
    mixture = mixtures.GaussianMixture.from_moments(jnp.ones(1), jnp.zeros((1, 3)), jnp.ones((1, 3)))
    with pytest.raises(ValueError, match="dimension"):
        transforms.TransformedMixture(mixture, transforms.BoundedTransform([0.0], [1.0]))


# Component variances in u stay well below 1: the probit push-forward then behaves like
# (b − x)^{1/σ² − 1} at a bound b, smooth enough for the midpoint rule.
def mixture_1d():
    return mixtures.GaussianMixture.from_moments(
        jnp.array([0.6, 0.4]), jnp.array([[-0.5], [1.0]]), jnp.array([[0.3], [0.5]])
    )


def mixture_2d():
    return mixtures.GaussianMixture.from_moments(
        jnp.array([0.5, 0.3, 0.2]),
        jnp.array([[0.0, 0.5], [1.0, -0.5], [-0.8, 0.0]]),
        jnp.array([[0.3, 0.25], [0.2, 0.35], [0.35, 0.3]]),
    )


def midpoints(lower, upper, num_points):
    step = (upper - lower) / num_points
    return lower + step * (np.arange(num_points) + 0.5), step


@pytest.mark.parametrize("kind", KINDS)
def test_push_forward_density_integrates_to_one_in_one_dimension(kind, getkey):
    density = transforms.TransformedMixture(mixture_1d(), transforms.BoundedTransform([-1.0], [2.0], kind=kind))
    x, step = midpoints(-1.0, 2.0, 20_000)
    probabilities = np.exp(log_prob(density, jnp.asarray(x)[:, None]))
    np.testing.assert_allclose(np.sum(probabilities) * step, 1.0, atol=1e-5)
    samples = sample(density, getkey(), 20_000)
    assert np.all((samples > -1.0) & (samples < 2.0))
    mean = np.sum(x * probabilities) * step
    np.testing.assert_allclose(np.mean(samples), mean, atol=4 * np.std(samples) / np.sqrt(20_000))


@pytest.mark.parametrize("kind", KINDS)
def test_push_forward_density_integrates_to_one_in_two_dimensions(kind, getkey):
    transform = transforms.BoundedTransform([-1.0, 0.0], [2.0, 0.5], kind=kind)
    density = transforms.TransformedMixture(mixture_2d(), transform)
    first, first_step = midpoints(-1.0, 2.0, 500)
    second, second_step = midpoints(0.0, 0.5, 500)
    grid = np.stack(np.meshgrid(first, second, indexing="ij"), axis=-1)
    probabilities = np.exp(log_prob(density, jnp.asarray(grid)))
    assert probabilities.shape == (500, 500)
    np.testing.assert_allclose(np.sum(probabilities) * first_step * second_step, 1.0, atol=3e-5)
    samples = sample(density, getkey(), 10_000)
    assert np.all((np.asarray(samples) > [-1.0, 0.0]) & (np.asarray(samples) < [2.0, 0.5]))


def test_log_prob_is_minus_infinity_outside_and_on_the_bounds():
    transform = transforms.BoundedTransform([-1.0, 0.0], [2.0, np.inf])
    density = transforms.TransformedMixture(mixture_2d(), transform)
    outside = jnp.array([[-1.5, 1.0], [0.0, -0.1], [2.0, 1.0], [-1.0, 1.0], [0.0, 0.0], [3.0, -2.0]])
    values = log_prob(density, outside)
    np.testing.assert_array_equal(values, -np.inf)
    indicator = lambda x: jnp.sum(jnp.where(jnp.isfinite(density.log_prob(x)), 0.0, 1.0))
    assert np.all(np.isfinite(jax.jit(jax.grad(indicator))(outside)))
    point = jnp.array([[0.3, 2.0]])
    u = to_unbounded(transform, point)
    expected = mixture_2d().log_prob(u) - log_abs_det_jacobian(transform, u)
    np.testing.assert_allclose(log_prob(density, point), expected, rtol=1e-12)
