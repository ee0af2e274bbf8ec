"""`with_budget`: a run goes on with another budget. The resized GP buffers equal the ones
`condition` builds at that capacity, and every learner's resized state has the shapes of a
state started with that budget, so that the drivers and `load_checkpoint` accept it."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import bo, bvbmc, gp, kernels, means, sparse, svbmc

KERNEL = kernels.SquaredExponential(lengthscale=jnp.array([0.7, 1.3]), variance=1.5)
X = jax.random.normal(jax.random.key(0), (6, 2))
Y = jnp.sin(X[:, 0]) + X[:, 1]
X_NEW, Y_NEW = jnp.array([0.3, -0.2]), jnp.asarray(0.4)
QUERY = jax.random.normal(jax.random.key(1), (5, 2))


def assert_same_tree(a, b):
    for left, right in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(left), np.asarray(right), rtol=1e-12, atol=1e-12)


def test_exact_posterior_with_capacity_equals_conditioning_at_that_capacity():
    small = gp.condition(KERNEL, means.Zero(), X, Y, 0.01, capacity=7)
    large = gp.condition(KERNEL, means.Zero(), X, Y, 0.01, capacity=10)
    assert_same_tree(small.with_capacity(10), large)
    assert_same_tree(large.with_capacity(7), small)
    extended = gp.update(small.with_capacity(10), X_NEW, Y_NEW, 0.01)
    assert_same_tree(gp.predict(extended, QUERY), gp.predict(gp.update(large, X_NEW, Y_NEW, 0.01), QUERY))
    with pytest.raises(ValueError, match=r"`capacity` \(5\) would drop used rows"):
        small.with_capacity(5)


def test_sparse_posterior_with_capacities_equals_conditioning_at_those_capacities():
    Z, mask = jnp.concatenate([X[:3], jnp.zeros((2, 2))]), jnp.array([True, True, True, False, False])
    small = sparse.condition(KERNEL, means.Zero(), X, Y, 0.01, Z, capacity=7, inducing_mask=mask)
    wider = sparse.condition(
        KERNEL, means.Zero(), X, Y, 0.01, jnp.concatenate([Z, jnp.zeros((3, 2))]), capacity=9,
        inducing_mask=jnp.concatenate([mask, jnp.zeros(3, bool)]),
    )  # fmt: skip
    resized = small.with_capacity(9).with_inducing_capacity(8)
    assert_same_tree(resized, wider)
    assert_same_tree(sparse.predict(resized, QUERY), sparse.predict(small, QUERY))
    assert_same_tree(resized.with_capacity(7).with_inducing_capacity(5), small)
    with pytest.raises(ValueError, match=r"`capacity` \(2\) would drop used inducing slots"):
        small.with_inducing_capacity(2)


def _shapes(tree):
    return [(leaf.shape, leaf.dtype) for leaf in jax.tree.leaves(tree)]


@pytest.mark.parametrize("method", ["BO", "BVBMC", "SVBMC"])
def test_with_budget_gives_the_shapes_of_a_run_started_with_that_budget(method):
    """Without computing (`eqx.filter_eval_shape`): the evaluation buffer, the GP buffers,
    SVBMC's inducing slots (M_max grows with the budget: 400 points, budgets 10 and 300) and
    its round history all follow the budget."""
    points = np.asarray(jax.random.normal(jax.random.key(2), (400, 2)))
    values = -0.5 * np.sum(points**2, axis=1)
    if method == "BO":
        learner, args, kwargs = bo.BO(), (points[:5], values[:5], -3 * np.ones(2), 3 * np.ones(2)), {}
    elif method == "BVBMC":
        learner, args, kwargs = bvbmc.BVBMC(), (points[:20], values[:20]), {"key": jax.random.key(0)}
    else:
        learner, args, kwargs = svbmc.SVBMC(), (points, values), {"key": jax.random.key(0)}
    short = eqx.filter_eval_shape(learner.init, *args, budget=10, **kwargs)
    long = eqx.filter_eval_shape(learner.init, *args, budget=300, **kwargs)
    assert jax.tree.structure(short) == jax.tree.structure(long)
    assert _shapes(eqx.filter_eval_shape(learner.with_budget, short, 300)) == _shapes(long)
    assert _shapes(eqx.filter_eval_shape(learner.with_budget, long, 10)) == _shapes(short)
