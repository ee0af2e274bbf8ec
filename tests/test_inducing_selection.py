"""Weighted greedy inducing-point selection (SVBMC eq. S16) against dense brute force."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gpcompose import kernels, sparse

KERNEL = kernels.SquaredExponential(lengthscale=jnp.array([0.4, 0.6]), variance=1.3)


_jitted_gram = jax.jit(lambda X: KERNEL.gram(X))


def gram(X):
    """Dense K(X, X) as a numpy array."""
    return np.asarray(_jitted_gram(X))


def make_data(key, num_points=40):
    input_key, noise_key = jax.random.split(key)
    X = jax.random.uniform(input_key, (num_points, 2), minval=-2.0, maxval=2.0)
    noise = jnp.exp(jax.random.uniform(noise_key, (num_points,), minval=-4.0, maxval=0.0))
    return X, noise


def schur_pivots(X, noise, mask, max_points, min_points, tolerance):
    """Pivoted Cholesky of D^{-1/2} K D^{-1/2} on the used rows by explicit Schur complements."""
    used = np.flatnonzero(mask)
    scale = 1.0 / np.sqrt(np.asarray(noise)[used])
    schur = gram(X)[np.ix_(used, used)] * scale[:, None] * scale[None, :]
    total = np.trace(schur)
    pivots = []
    while len(pivots) < min(max_points, used.size):
        residual = np.diag(schur).copy()
        residual[pivots] = -np.inf
        remaining = np.sum(np.maximum(np.diag(schur), 0.0)) - np.sum(np.maximum(np.diag(schur)[pivots], 0.0))
        if len(pivots) >= min_points and remaining < tolerance * total:
            break
        pivot = int(np.argmax(residual))
        schur = schur - np.outer(schur[:, pivot], schur[pivot, :]) / schur[pivot, pivot]
        pivots.append(pivot)
    return used[pivots]


def residual_ratio(K, noise, mask, chosen):
    """Tr((K − Q) D⁻¹) / Tr(K D⁻¹) on the used rows, Q = K_XZ K_ZZ⁻¹ K_ZX, Z = X[chosen]."""
    used = np.flatnonzero(mask)
    diagonal = np.diag(K)[used]
    cross = K[np.ix_(chosen, used)]
    nystrom = np.sum(cross * np.linalg.solve(K[np.ix_(chosen, chosen)], cross), axis=0)
    weights = 1.0 / np.asarray(noise)[used]
    return np.sum((diagonal - nystrom) * weights) / np.sum(diagonal * weights)


def chosen(indices, inducing_mask):
    inducing_mask = np.asarray(inducing_mask)
    assert np.all(inducing_mask[: inducing_mask.sum()]), "the used slots must form a prefix"
    return np.asarray(indices)[inducing_mask]


def test_equals_schur_complement_pivoted_cholesky(getkey):
    X, noise = make_data(getkey())
    mask = jnp.ones(40, bool)
    indices, inducing_mask = sparse.select_inducing_points(
        KERNEL, X, noise, mask, max_points=25, min_points=0, tolerance=0.0
    )
    np.testing.assert_array_equal(chosen(indices, inducing_mask), schur_pivots(X, noise, mask, 25, 0, 0.0))
    assert inducing_mask.sum() == 25


def test_stopping_rule_respects_tolerance_and_bounds(getkey):
    X, noise = make_data(getkey())
    K = gram(X)
    mask = jnp.ones(40, bool)
    for min_points, max_points, tolerance in ((2, 30, 1e-1), (3, 30, 1e-2), (20, 30, 1e-1), (0, 6, 1e-8)):
        indices, inducing_mask = sparse.select_inducing_points(
            KERNEL, X, noise, mask, max_points=max_points, min_points=min_points, tolerance=tolerance
        )
        selection = chosen(indices, inducing_mask)
        np.testing.assert_array_equal(selection, schur_pivots(X, noise, mask, max_points, min_points, tolerance))
        count = selection.size
        assert min_points <= count <= max_points
        if min_points < count < max_points:
            assert residual_ratio(K, noise, mask, selection) < tolerance
            assert residual_ratio(K, noise, mask, selection[:-1]) >= tolerance
        if count == min_points:
            assert residual_ratio(K, noise, mask, selection) < tolerance
        if count == max_points:
            assert residual_ratio(K, noise, mask, selection[:-1]) >= tolerance


def test_residual_ratio_decreases_along_the_selection(getkey):
    X, noise = make_data(getkey())
    K = gram(X)
    mask = jnp.ones(40, bool)
    indices, inducing_mask = sparse.select_inducing_points(
        KERNEL, X, noise, mask, max_points=20, min_points=20, tolerance=1e-5
    )
    selection = chosen(indices, inducing_mask)
    ratios = [residual_ratio(K, noise, mask, selection[:count]) for count in range(1, selection.size + 1)]
    assert np.all(np.diff(ratios) <= 1e-12)


def test_uniform_noise_gives_greedy_variance_selection(getkey):
    X, _ = make_data(getkey())
    mask = jnp.ones(40, bool)
    K = gram(X)
    greedy = []
    for _ in range(12):
        variance = np.diag(K).copy()
        if greedy:
            cross = K[greedy]
            variance -= np.sum(cross * np.linalg.solve(K[np.ix_(greedy, greedy)], cross), axis=0)
        variance[greedy] = -np.inf
        greedy.append(int(np.argmax(variance)))
    for noise in (1.0, 0.03):
        indices, inducing_mask = sparse.select_inducing_points(
            KERNEL, X, noise, mask, max_points=12, min_points=12, tolerance=1e-5
        )
        np.testing.assert_array_equal(chosen(indices, inducing_mask), greedy)


def test_unused_rows_are_never_chosen_and_rows_never_repeat(getkey):
    X, noise = make_data(getkey())
    mask = jax.random.bernoulli(getkey(), 0.3, (40,))
    # Unused rows look very attractive: tiny noise (huge weight), arbitrary inputs.
    noise = jnp.where(mask, noise, 1e-12)
    X = jnp.where(mask[:, None], X, 50.0 * jax.random.normal(getkey(), (40, 2)))
    num_used = int(mask.sum())
    indices, inducing_mask = sparse.select_inducing_points(
        KERNEL, X, noise, mask, max_points=30, min_points=30, tolerance=1e-5
    )
    selection = chosen(indices, inducing_mask)
    assert selection.size == num_used
    np.testing.assert_array_equal(np.sort(selection), np.flatnonzero(mask))
    np.testing.assert_array_equal(selection, schur_pivots(X, noise, mask, 30, 30, 1e-5))


def test_duplicated_inputs_stop_at_the_numerical_rank(getkey):
    X, noise = make_data(getkey(), num_points=10)
    X = jnp.concatenate([X, X, X])
    noise = jnp.concatenate([noise, 2 * noise, noise])
    indices, inducing_mask = sparse.select_inducing_points(
        KERNEL, X, noise, jnp.ones(30, bool), max_points=30, min_points=30, tolerance=1e-5
    )
    selection = chosen(indices, inducing_mask)
    assert selection.size == 10
    assert np.unique(np.asarray(X)[selection], axis=0).shape[0] == 10


def test_jit_once_and_vmap_over_datasets_equals_loop(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def select(X, noise, mask):
        return jax.vmap(
            lambda X, noise, mask: sparse.select_inducing_points(
                KERNEL, X, noise, mask, max_points=15, min_points=4, tolerance=1e-3
            )
        )(X, noise, mask)

    for _ in range(2):
        data = [make_data(key) for key in jax.random.split(getkey(), 3)]
        X = jnp.stack([d[0] for d in data])
        noise = jnp.stack([d[1] for d in data])
        mask = jax.random.bernoulli(getkey(), 0.8, (3, 40))
        indices, inducing_mask = select(X, noise, mask)
        for batch in range(3):
            single = sparse.select_inducing_points(
                KERNEL, X[batch], noise[batch], mask[batch], max_points=15, min_points=4, tolerance=1e-3
            )
            np.testing.assert_array_equal(indices[batch], single[0])
            np.testing.assert_array_equal(inducing_mask[batch], single[1])


def test_float32(getkey):
    X, noise = make_data(getkey())
    kernel32 = kernels.SquaredExponential(lengthscale=jnp.array([0.4, 0.6], jnp.float32), variance=jnp.float32(1.3))
    indices, inducing_mask = sparse.select_inducing_points(
        kernel32, X.astype(jnp.float32), noise.astype(jnp.float32), jnp.ones(40, bool), max_points=10, min_points=10
    )
    reference = schur_pivots(X, noise, np.ones(40, bool), 10, 10, 1e-5)
    np.testing.assert_array_equal(chosen(indices, inducing_mask), reference)
