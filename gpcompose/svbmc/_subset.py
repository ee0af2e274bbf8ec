"""Stratified k-means subset of the training data (Li, Clarté & Acerbi 2023, §3.3, App. B.2).

The exact GP that initialises the sparse-GP hyperparameters is trained on a subset of
about 300 points that covers the input space at every density level: the data are split
into groups by log density and k-means runs inside each group.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .._jit import public_jit
from .._validation import check_inputs, check_mask, check_targets
from ..sparse import kmeans


def centres_per_stratum(size: int, num_strata: int) -> list[int]:
    """`size` centres split as evenly as possible; the highest strata get the remainder."""
    base, remainder = divmod(size, num_strata)
    return [base + (stratum >= num_strata - remainder) for stratum in range(num_strata)]


def nearest_distinct_rows(
    X: Float[Array, "N D"],
    available: Bool[Array, " N"],
    strata: Int[Array, " N"],
    centres: Float[Array, "C D"],
    centre_strata: Int[Array, " C"],
    active: Bool[Array, " C"],
) -> Int[Array, " C"]:
    """For each active centre in turn, the nearest row of its stratum not taken yet (the
    nearest available row of any stratum when its stratum is exhausted)."""

    def take(remaining, centre):
        position, stratum, is_active = centre
        distances = jnp.sum((X - position[None, :]) ** 2, axis=1)
        in_stratum = remaining & (strata == stratum)
        allowed = jnp.where(jnp.any(in_stratum), in_stratum, remaining)
        row = jnp.argmin(jnp.where(allowed, distances, jnp.inf))
        return remaining.at[row].set(remaining[row] & ~is_active), row

    _, rows = lax.scan(take, available, (centres, centre_strata, active))
    return rows


@public_jit(static_argnames=("size", "num_strata", "num_iterations"))
def stratified_kmeans_subset(
    key: PRNGKeyArray,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    mask: Bool[ArrayLike, " N"],
    *,
    size: int = 300,
    num_strata: int = 5,
    num_iterations: int = 20,
) -> tuple[Int[Array, " size"], Bool[Array, " size"]]:
    """Indices of a stratified k-means subset of the used rows (Li, Clarté & Acerbi 2023, §3.3, App. B.2).

    The used rows are split by their log density `y` into `num_strata` groups of equal
    count (row n of rank r_n among the N_used values of y goes to stratum ⌊r_n S/N_used⌋).
    Inside each group, k-means (k-means++ seeding from `key`, then `num_iterations`
    Lloyd steps) places ⌊size/S⌋ centres, one more in each of the (size mod S) highest
    groups, and the row nearest each centre is kept, without repeats. The paper leaves
    the group boundaries and the allocation unstated; these are our choices.

    If there are at most `size` used rows, all of them are returned. **Returns:**
    `indices` (size,) of rows of `X` and `subset_mask` (size,), True on the slots in use
    (a prefix); indices of unused slots are 0.
    """
    X = check_inputs(X, "X")
    num_points = X.shape[0]
    y = check_targets(y, "y", num_points)
    mask = check_mask(mask, num_points, "X")
    for name, value, smallest in (
        ("size", size, 1),
        ("num_strata", num_strata, 1),
        ("num_iterations", num_iterations, 0),
    ):
        if not isinstance(value, int) or value < smallest:
            raise ValueError(f"`{name}` must be a Python int >= {smallest}, got {value!r}.")

    num_used = jnp.sum(mask)
    used_rows = jnp.nonzero(mask, size=size, fill_value=0)[0]
    used_mask = jnp.arange(size) < num_used
    if num_points <= size:
        return used_rows, used_mask

    def clustered_rows():
        X_used = jnp.where(mask[:, None], X, 0.0)
        centred = X_used - jnp.sum(X_used, axis=0)[None, :] / jnp.maximum(num_used, 1).astype(X.dtype)
        order = jnp.argsort(jnp.where(mask, y, jnp.inf), stable=True)
        rank = jnp.zeros((num_points,), order.dtype).at[order].set(jnp.arange(num_points, dtype=order.dtype))
        strata = jnp.where(mask, rank * num_strata // jnp.maximum(num_used, 1), num_strata)

        counts = centres_per_stratum(size, num_strata)
        num_slots = max(counts)
        active = jnp.arange(num_slots)[None, :] < jnp.asarray(counts)[:, None]

        def cluster(stratum_key, stratum, stratum_active):
            members = strata == stratum
            return kmeans(
                stratum_key, centred, num_slots, mask=members, active=stratum_active, num_iterations=num_iterations
            )

        stratum_ids = jnp.arange(num_strata)
        centres = jax.vmap(cluster)(jax.random.split(key, num_strata), stratum_ids, active)
        rows = nearest_distinct_rows(
            centred,
            mask,
            strata,
            centres.reshape(num_strata * num_slots, -1),
            jnp.repeat(stratum_ids, num_slots),
            active.reshape(-1),
        )
        flat_active = active.reshape(-1)
        slots = jnp.where(flat_active, jnp.cumsum(flat_active) - 1, size)
        indices = jnp.zeros((size,), used_rows.dtype).at[slots].set(rows.astype(used_rows.dtype), mode="drop")
        return indices, jnp.ones((size,), bool)

    return lax.cond(num_used <= size, lambda: (used_rows, used_mask), clustered_rows)
