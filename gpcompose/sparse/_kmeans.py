"""k-means centers (k-means++ seeding, then Lloyd iterations): the usual initial inducing
inputs of a sparse GP (k-means++ in Galy-Fajou, Wenzel & Opper 2020, §5.3), and the clustering
step of SVBMC's stratified subset (Li, Clarté & Acerbi 2023, §3.3)."""

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray

from .._jit import public_jit
from .._validation import check_inputs, check_mask


def assignment_distances(X: Float[Array, "N D"], centers: Float[Array, "K D"]) -> Float[Array, "N K"]:
    """‖x_n − c_k‖² through the expansion ‖x‖² − 2 xᵀc + ‖c‖² (X is centered by the caller): for
    nearest-center assignment, where its rounding near coincident points does not matter; kernels
    use the accurate `kernels.squared_distances`."""
    cross = X @ centers.T
    return jnp.sum(X**2, axis=1)[:, None] - 2 * cross + jnp.sum(centers**2, axis=1)[None, :]


def _seed_centers(key: PRNGKeyArray, X: Float[Array, "N D"], members: Bool[Array, " N"], num_slots: int):
    """k-means++ seeding (Arthur & Vassilvitskii 2007): each center is a member drawn with
    probability ∝ its squared distance to the nearest center so far (uniformly for the
    first one, or when every member already coincides with a center)."""

    def add(nearest, key):
        weights = jnp.where(members, nearest, 0.0)
        total = jnp.sum(weights)
        use_distances = jnp.isfinite(total) & (total > 0)
        logits = jnp.where(
            use_distances,
            jnp.where(weights > 0, jnp.log(jnp.where(weights > 0, weights, 1.0)), -jnp.inf),
            jnp.where(members, 0.0, -jnp.inf),
        )
        center = X[jax.random.categorical(key, logits)]
        return jnp.minimum(nearest, jnp.sum((X - center[None, :]) ** 2, axis=1)), center

    start = jnp.full((X.shape[0],), jnp.inf, X.dtype)
    _, centers = lax.scan(add, start, jax.random.split(key, num_slots))
    return centers


def _lloyd(X, members, centers, active, num_iterations: int):
    """Lloyd iterations on the member rows: assign each to its nearest active center, move
    each center to the mean of its rows (a center with no rows stays where it is)."""
    num_slots = centers.shape[0]

    def iterate(_, centers):
        distances = jnp.where(active[None, :], assignment_distances(X, centers), jnp.inf)
        assignment = jnp.argmin(distances, axis=1)
        membership = (assignment[:, None] == jnp.arange(num_slots)[None, :]) & members[:, None]
        counts = jnp.sum(membership, axis=0)
        sums = membership.T.astype(X.dtype) @ X
        means = sums / jnp.maximum(counts, 1)[:, None].astype(X.dtype)
        return jnp.where(counts[:, None] > 0, means, centers)

    return lax.fori_loop(0, num_iterations, iterate, centers)


@public_jit(static_argnames=("num_centers", "num_iterations"))
def kmeans(
    key: PRNGKeyArray,
    X: Float[ArrayLike, "N D"],
    num_centers: int,
    *,
    mask: Bool[ArrayLike, " N"] | None = None,
    active: Bool[ArrayLike, " num_centers"] | None = None,
    num_iterations: int = 20,
) -> Float[Array, "num_centers D"]:
    """`num_centers` k-means centers of the rows of `X`: k-means++ seeding from `key`
    (Arthur & Vassilvitskii 2007), then `num_iterations` Lloyd iterations.

    `mask` (N,) marks the rows that take part (default: all). `active` (num_centers,)
    marks the center slots in use, for a fixed-capacity set of centers (default: all);
    an inactive slot keeps its seed and attracts no rows, and so does a center left with
    no rows. Typical use: `Z = sparse.kmeans(key, X, 300)`, the inducing inputs of a
    sparse GP.
    """
    X = check_inputs(X, "X")
    if isinstance(num_centers, bool) or not isinstance(num_centers, int) or num_centers < 1:
        raise ValueError(f"`num_centers` must be a positive Python int, got {num_centers!r}.")
    if isinstance(num_iterations, bool) or not isinstance(num_iterations, int) or num_iterations < 0:
        raise ValueError(f"`num_iterations` must be a Python int >= 0, got {num_iterations!r}.")
    members = check_mask(mask, X.shape[0], "X")
    active = jnp.ones((num_centers,), bool) if active is None else jnp.asarray(active, bool)
    if active.shape != (num_centers,):
        raise ValueError(f"`active` must have shape ({num_centers},) (one per center), got shape {active.shape}.")
    centers = _seed_centers(key, X, members, num_centers)
    return _lloyd(X, members, centers, active, num_iterations)
