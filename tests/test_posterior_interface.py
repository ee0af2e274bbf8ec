"""The posterior interface: the exact, sparse and square-root posteriors answer `predict`,
`lookahead_variance` and `update` as their modules' functions and a refit from scratch do, and
`functional_moments` of point functionals reproduces `predict` (the form Bayesian quadrature uses)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import AbstractGaussianPosterior, AbstractPosterior, bounded, gp, kernels, means, sparse

KEY = jax.random.key(0)
X = jax.random.uniform(KEY, (12, 2))
Y = jnp.sin(3.0 * X[:, 0]) + X[:, 1]
QUERY = jax.random.uniform(jax.random.key(1), (5, 2))
KERNEL = kernels.SquaredExponential(lengthscale=jnp.array([0.4, 0.6]), variance=1.5)
NOISE = 1e-2


def exact(count, capacity=None):
    return gp.condition(KERNEL, means.Constant(0.2), X[:count], Y[:count], NOISE, capacity=capacity)


def sparse_posterior(count, capacity=None):
    return sparse.condition(KERNEL, means.Constant(0.2), X[:count], Y[:count], NOISE, X[::2], capacity=capacity)


def square_root(count, capacity=None):
    return bounded.condition_square_root(KERNEL, X[:count], Y[:count], NOISE, 3.0, capacity=capacity)


@pytest.mark.parametrize(
    "build, predict, lookahead",
    [
        (exact, gp.predict, gp.lookahead_variance),
        (sparse_posterior, sparse.predict, sparse.lookahead_variance),
        (square_root, bounded.predict_linearized, bounded.square_root_lookahead_variance),
    ],
    ids=["exact", "sparse", "square_root"],
)
def test_methods_are_the_module_functions_and_update_equals_refit(build, predict, lookahead):
    posterior = build(12)
    assert isinstance(posterior, AbstractPosterior)
    for got, want in zip(posterior.predict(QUERY), predict(posterior, QUERY)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        posterior.lookahead_variance(QUERY, X[0], NOISE), lookahead(posterior, QUERY, X[0], NOISE)
    )
    updated = build(11, capacity=12).update(X[11], Y[11], NOISE)
    for got, want in zip(updated.predict(QUERY), posterior.predict(QUERY)):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def sparse_with_free_slots(count):
    return sparse_posterior(count).with_inducing_capacity(9)


@pytest.mark.parametrize(
    "build", [exact, sparse_posterior, sparse_with_free_slots], ids=["exact", "sparse", "sparse-free-slots"]
)
def test_functional_moments_of_point_values_give_the_predictive(build):
    posterior = build(12)
    assert isinstance(posterior, AbstractGaussianPosterior)
    support, used = posterior.support
    cross = jnp.where(used[None, :], KERNEL.cross(QUERY, support), 0.0)
    shift, reduction = posterior.functional_moments(cross)
    mean, covariance = (gp if build is exact else sparse).predict_covariance(posterior, QUERY)
    np.testing.assert_allclose(posterior.mean(QUERY) + shift, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(KERNEL.gram(QUERY) - reduction, covariance, rtol=1e-8, atol=1e-10)


def test_reducible_variance_is_the_sparse_floor_free_variance():
    posterior = sparse_posterior(12)
    for got, want in zip(posterior.reducible_predict(QUERY), sparse.reducible_variance(posterior, QUERY)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(exact(12).reducible_predict(QUERY), exact(12).predict(QUERY)):
        np.testing.assert_array_equal(got, want)
