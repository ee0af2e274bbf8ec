"""k-means (`sparse.kmeans`) and the stratified k-means subset of SVBMC (§3.3, App. B.2)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose.svbmc import stratified_kmeans_subset


def strata_of(y, mask, num_strata):
    """Stratum of each used row: ⌊rank · S / N_used⌋ with ranks by y among the used rows."""
    used = np.flatnonzero(mask)
    ranks = np.empty(used.size, int)
    ranks[np.argsort(np.asarray(y)[used], kind="stable")] = np.arange(used.size)
    strata = np.full(len(y), -1)
    strata[used] = ranks * num_strata // used.size
    return strata


# One shape for most tests, so that they share a compilation: N = 80, D = 2, 12 points, 5 strata.
SIZE = 12
NUM_STRATA = 5


def subset(key, X, y, mask, size=SIZE):
    return stratified_kmeans_subset(key, X, y, mask, size=size, num_strata=NUM_STRATA)


def test_few_used_rows_returns_all_of_them(getkey):
    X = jax.random.normal(getkey(), (80, 2))
    y = jax.random.normal(getkey(), (80,))
    mask = jax.random.bernoulli(getkey(), 0.12, (80,))
    num_used = int(mask.sum())
    assert num_used <= SIZE
    for size in (80, SIZE):  # the static (N ≤ size) and the dynamic (N_used ≤ size < N) paths
        indices, subset_mask = subset(getkey(), X, y, mask, size=size)
        assert indices.shape == (size,)
        np.testing.assert_array_equal(subset_mask, np.arange(size) < num_used)
        np.testing.assert_array_equal(indices[:num_used], np.flatnonzero(mask))


def test_distinct_used_rows_allocated_by_stratum(getkey):
    X = jax.random.normal(getkey(), (80, 2))
    y = -jnp.sum(X**2, axis=1)
    mask = jnp.arange(80) % 7 != 3
    indices, subset_mask = subset(getkey(), X, y, mask)
    assert np.all(subset_mask)
    indices = np.asarray(indices)
    assert np.unique(indices).size == SIZE
    assert np.all(np.asarray(mask)[indices])
    counts = np.bincount(strata_of(y, mask, NUM_STRATA)[indices], minlength=NUM_STRATA)
    np.testing.assert_array_equal(counts, [2, 2, 2, 3, 3])


def test_one_point_per_well_separated_cluster(getkey):
    # Ten tight clusters of 30 points; the five on the left have low y, the five on the right high y.
    centres = jnp.stack([jnp.repeat(jnp.array([-20.0, 20.0]), 5), jnp.tile(10.0 * jnp.arange(5.0), 2)], axis=1)
    X = jnp.repeat(centres, 30, axis=0) + 0.01 * jax.random.normal(getkey(), (300, 2))
    y = X[:, 0] + 0.1 * jax.random.normal(getkey(), (300,))
    mask = jnp.ones(300, bool)
    for key in jax.random.split(getkey(), 3):
        indices, _ = stratified_kmeans_subset(key, X, y, mask, size=10, num_strata=2)
        clusters = np.asarray(indices) // 30
        np.testing.assert_array_equal(np.sort(clusters), np.arange(10))


def test_jit_once_and_vmap_over_keys_equals_loop(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def subsets(keys, X, y, mask):
        return jax.vmap(lambda key: subset(key, X, y, mask))(keys)

    for _ in range(2):
        X = jax.random.normal(getkey(), (80, 2))
        y = jax.random.normal(getkey(), (80,))
        mask = jax.random.bernoulli(getkey(), 0.7, (80,))
        keys = jax.random.split(getkey(), 3)
        indices, subset_mask = subsets(keys, X, y, mask)
        for batch, key in enumerate(keys):
            single = subset(key, X, y, mask)
            np.testing.assert_array_equal(indices[batch], single[0])
            np.testing.assert_array_equal(subset_mask[batch], single[1])
    assert len({tuple(np.sort(row)) for row in np.asarray(indices)}) > 1


def test_float32(getkey):
    X = jax.random.normal(getkey(), (80, 2), jnp.float32)
    y = jax.random.normal(getkey(), (80,), jnp.float32)
    indices, subset_mask = subset(getkey(), X, y, jnp.ones(80, bool))
    assert np.all(subset_mask) and np.unique(np.asarray(indices)).size == SIZE


def test_kmeans_finds_separated_clusters_and_respects_mask_and_active():
    """`sparse.kmeans` recovers the means of three well-separated clusters; rows outside
    `mask` do not move the centres; an inactive slot keeps its k-means++ seed, a member row."""
    key = jax.random.key(3)
    means = jnp.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    X = jnp.repeat(means, 50, axis=0) + 0.1 * jax.random.normal(key, (150, 2))
    centres = gpcompose.sparse.kmeans(jax.random.key(0), X, 3)
    order = np.lexsort(np.asarray(centres).T[::-1])
    expected = [np.asarray(X[50 * k : 50 * (k + 1)]).mean(axis=0) for k in (0, 2, 1)]
    np.testing.assert_allclose(np.asarray(centres)[order], expected, atol=1e-12)

    far = jnp.concatenate([X, jnp.full((10, 2), 1e3)])
    mask = jnp.arange(160) < 150
    masked = gpcompose.sparse.kmeans(jax.random.key(0), far, 3, mask=mask)
    np.testing.assert_allclose(np.sort(np.asarray(masked), axis=0), np.sort(np.asarray(centres), axis=0), atol=1e-12)

    active = jnp.array([True, True, False])
    partial = gpcompose.sparse.kmeans(jax.random.key(0), X, 3, active=active, num_iterations=5)
    assert np.any(np.all(np.asarray(X) == np.asarray(partial[2]), axis=1))
    with pytest.raises(ValueError, match="`active` must have shape"):
        gpcompose.sparse.kmeans(jax.random.key(0), X, 3, active=jnp.ones((2,), bool))
    with pytest.raises(ValueError, match="`num_centers` must be a positive"):
        gpcompose.sparse.kmeans(jax.random.key(0), X, 0)
