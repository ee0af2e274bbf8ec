"""The whitened inference space: `WhitenedTransform` against autodiff Jacobians and exact
affine moments, `whitening_from_points`, and SVBMC's `initial_whitening` on a correlated
Gaussian target."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import mixtures, svbmc, transforms
from gpcompose.svbmc._whitening import initial_whitening

LOWER = np.array([-1.0, 0.5, -np.inf])
UPPER = np.array([2.0, np.inf, np.inf])


def random_whitening(key, bounded):
    rotation_key, scale_key, centre_key = jax.random.split(key, 3)
    rotation, _ = jnp.linalg.qr(jax.random.normal(rotation_key, (3, 3)))
    scales = jnp.exp(jax.random.normal(scale_key, (3,)))
    return transforms.WhitenedTransform(bounded, 0.3 * jax.random.normal(centre_key, (3,)), rotation, scales)


def test_round_trip_and_log_jacobian_match_autodiff(getkey):
    transform = random_whitening(getkey(), transforms.BoundedTransform(LOWER, UPPER))
    w = jax.random.normal(getkey(), (6, 3))
    x = eqx.filter_jit(lambda t, w: t.from_unbounded(w))(transform, w)
    np.testing.assert_allclose(eqx.filter_jit(lambda t, x: t.to_unbounded(x))(transform, x), w, atol=1e-10)
    jacobians = eqx.filter_jit(lambda t, w: jax.vmap(jax.jacfwd(t.from_unbounded))(w))(transform, w)
    expected = np.linalg.slogdet(np.asarray(jacobians))[1]
    actual = eqx.filter_jit(lambda t, w: t.log_abs_det_jacobian(w))(transform, w)
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


def test_affine_push_forward_has_exact_moments_and_density(getkey):
    transform = random_whitening(getkey(), transforms.BoundedTransform(np.full(3, -np.inf), np.full(3, np.inf)))
    mixture = mixtures.GaussianMixture.from_moments(
        jnp.array([0.7, 0.3]), jnp.array([[0.0, 1.0, -0.5], [1.0, -1.0, 0.0]]), jnp.array([[0.5, 1.0, 2.0]] * 2)
    )
    density = transforms.TransformedMixture(mixture, transform)
    samples = np.asarray(density.sample(getkey(), 200_000))
    np.testing.assert_allclose(density.mean(), samples.mean(0), atol=0.02)
    np.testing.assert_allclose(density.covariance(), np.cov(samples.T), atol=0.04)
    # the density of x = c + A u with u ~ q is q(u(x)) / |det A|
    matrix = transform.rotation * transform.scales[None, :]
    x = jnp.asarray(samples[:5])
    u = jnp.linalg.solve(matrix, (x - transform.centre[None, :]).T).T
    expected = mixture.log_prob(u) - np.linalg.slogdet(np.asarray(matrix))[1]
    np.testing.assert_allclose(density.log_prob(x), expected, rtol=1e-10)
    bounded = transforms.TransformedMixture(
        mixture, random_whitening(getkey(), transforms.BoundedTransform(LOWER, UPPER))
    )
    with pytest.raises(ValueError, match="closed form"):
        bounded.mean()


def test_whitening_from_points_gives_unit_covariance_and_caps_flat_directions(getkey):
    bounded = transforms.BoundedTransform(np.full(3, -np.inf), np.full(3, np.inf))
    covariance = jnp.array([[4.0, 1.9, 0.0], [1.9, 1.0, 0.0], [0.0, 0.0, 0.25]])
    points = jax.random.multivariate_normal(getkey(), jnp.array([1.0, -2.0, 0.5]), covariance, (4000,))
    mask = jnp.arange(4000) < 3000
    points = jnp.where(mask[:, None], points, 100.0)  # masked rows must not count
    transform = transforms.whitening_from_points(bounded, points, mask)
    whitened = np.asarray(transform.whiten(points[:3000]))
    np.testing.assert_allclose(np.cov(whitened.T), np.eye(3), atol=1e-10)
    np.testing.assert_allclose(whitened.mean(0), 0.0, atol=1e-10)
    on_a_line = jnp.stack([jnp.linspace(0.0, 1.0, 50), jnp.linspace(0.0, 2.0, 50), jnp.zeros(50)], axis=1)
    flat = transforms.whitening_from_points(bounded, on_a_line, jnp.ones(50, bool), max_condition=1e4)
    assert np.all(np.isfinite(np.asarray(flat.scales)))
    np.testing.assert_allclose(np.min(flat.scales) / np.max(flat.scales), 1e-2, rtol=1e-6)


def test_initial_whitening_makes_a_correlated_posterior_round(getkey):
    """On a Gaussian with correlation 0.98 (condition number ≈ 100), the whitened
    space's posterior covariance has condition number below 3; with `whitening=False`
    the transform is the identity."""
    covariance = jnp.array([[1.0, 0.98], [0.98, 1.0]])
    precision = jnp.linalg.inv(covariance)
    X = 3.0 * jax.random.normal(getkey(), (2000, 2))
    y = -0.5 * jnp.einsum("nd,de,ne->n", X, precision, X)
    bounded = transforms.BoundedTransform(np.full(2, -np.inf), np.full(2, np.inf))
    variance = jnp.full(2000, 1e-5)
    transform = initial_whitening(bounded, X, y, variance, svbmc.SVBMCOptions())
    matrix = np.asarray(transform.rotation * transform.scales[None, :])
    whitened_covariance = np.linalg.solve(matrix, np.linalg.solve(matrix, np.asarray(covariance)).T)
    eigenvalues = np.linalg.eigvalsh(whitened_covariance)
    assert eigenvalues[-1] / eigenvalues[0] < 3.0
    identity = initial_whitening(bounded, X, y, variance, svbmc.SVBMCOptions(whitening=False))
    np.testing.assert_array_equal(identity.whiten(X), X)
