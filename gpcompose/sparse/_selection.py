"""Greedy selection of inducing points among the training inputs (Li et al. 2023, §3.3, App. B.2, eq. S16)."""

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._jit import public_jit
from .._validation import broadcast_per_row, check_inputs, check_mask, require_finite, require_positive
from ..kernels import AbstractKernel


@public_jit(static_argnames=("max_points",))
def select_inducing_points(
    kernel: AbstractKernel,
    X: Float[ArrayLike, "N D"],
    noise_variance: Float[ArrayLike, "*N"],
    mask: Bool[ArrayLike, " N"],
    *,
    max_points: int,
    min_points: int,
    tolerance: Float[ArrayLike, ""] = 1e-5,
) -> tuple[Int[Array, " max_points"], Bool[Array, " max_points"]]:
    """Weighted greedy variance selection of inducing inputs Z ⊂ X (Li et al. 2023, eq. S16).

    Each step adds the training input with the largest weighted residual variance
    argmax_n (k_nn − Q_nn)/σ²_n, Q = K_XZ K_ZZ⁻¹ K_ZX. This is pivoted Cholesky of
    K̃ = D^{−1/2} K D^{−1/2}, D = diag(σ²_n), computed as in Chen et al. (2018, Alg. 1):

        d_n = k_nn/σ²_n;   for j = 1, 2, …:  p = argmax_n d_n,
        e_n = (K̃_pn − Σ_{i<j} C_ip C_in)/√d_p,   C_j = e,   d ← d − e²,

    where d_n is the residual (k_nn − Q_nn)/σ²_n of the points chosen so far. Selection
    stops once the residual trace ratio Σ_n d_n / Σ_n k_nn/σ²_n = Tr((K − Q)D⁻¹)/Tr(K D⁻¹)
    is below `tolerance` and at least `min_points` points are chosen, or when
    `max_points` are chosen. It also stops when no used row is left, or when the largest
    residual is at rounding level (d_p ≤ 100 ε k_pp/σ²_p: the weighted kernel matrix is
    numerically of lower rank), in which case fewer than `min_points` may be returned.

    **Arguments:** `kernel`, inputs `X` (N, D), per-row `noise_variance` σ²_n (scalar or
    (N,), the total noise including noise shaping), `mask` (N,) of used rows, the static
    capacity `max_points`, `min_points` and `tolerance`.

    **Returns:** `indices` (max_points,) of the chosen rows of `X` in the order chosen,
    and `inducing_mask` (max_points,), True on the slots in use (a prefix); the indices
    of unused slots are 0. Cost O(N max_points²) time and O(N max_points) memory.
    """
    X = check_inputs(X, "X")
    num_points = X.shape[0]
    if not isinstance(max_points, int) or max_points < 1:
        raise ValueError(f"`max_points` must be a positive Python int, got {max_points!r}.")
    mask = check_mask(mask, num_points, "X")
    noise_variance = broadcast_per_row(noise_variance, "noise_variance", num_points, X.dtype)
    noise_variance = require_positive(jnp.where(mask, noise_variance, 1.0), "noise_variance")
    X = require_finite(jnp.where(mask[:, None], X, 0.0), "X")
    inverse_sd = jnp.where(mask, lax.rsqrt(noise_variance), 0.0)

    initial_residual = kernel.diagonal(X) * inverse_sd**2
    total = jnp.sum(initial_residual)
    rounding_level = 100 * jnp.finfo(X.dtype).eps * initial_residual

    def choose(carry, slot):
        factor, residual, chosen = carry
        candidates = mask & ~chosen
        scores = jnp.where(candidates, residual, -jnp.inf)
        pivot = jnp.argmax(scores)
        pivot_residual = scores[pivot]
        remaining = jnp.sum(jnp.where(candidates, jnp.maximum(residual, 0.0), 0.0))
        converged = (slot >= min_points) & (remaining < tolerance * total)
        take = ~converged & (pivot_residual > rounding_level[pivot])
        weighted_row = kernel.cross(X[pivot][None], X)[0] * inverse_sd[pivot] * inverse_sd
        column = (weighted_row - factor[:, pivot] @ factor) * lax.rsqrt(jnp.where(take, pivot_residual, 1.0))
        column = jnp.where(take, column, 0.0)
        carry = (factor.at[slot].set(column), residual - column**2, chosen.at[pivot].set(chosen[pivot] | take))
        return carry, (jnp.where(take, pivot, 0), take)

    start = (
        jnp.zeros((max_points, num_points), X.dtype),
        initial_residual,
        jnp.zeros((num_points,), bool),
    )
    _, (indices, inducing_mask) = lax.scan(choose, start, jnp.arange(max_points))
    return indices, inducing_mask
