"""Trimming of extremely low-density training points (Li, Clarté & Acerbi 2023, App. B.1)."""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._jit import public_jit
from .._validation import broadcast_per_row, check_mask


@public_jit()
def trim_mask(
    y: Float[ArrayLike, " N"],
    observation_sd: Float[ArrayLike, "*N"],
    mask: Bool[ArrayLike, " N"],
    threshold: Float[ArrayLike, ""],
    *,
    beta: Float[ArrayLike, ""] = 1.96,
) -> Bool[Array, " N"]:
    """Rows to keep after trimming (Li, Clarté & Acerbi 2023, App. B.1).

    With lcb_n = y_n − β σ_n and ucb_n = y_n + β σ_n, row n is removed when

        max_m lcb_m − ucb_n > η,

    the maximum running over used rows only; η = `threshold` (the paper uses η = 20 D),
    β = `beta` and σ_n = `observation_sd` (scalar or (N,)). Returns `mask` with the
    removed rows set to False; the row with the largest lower bound is always kept.
    """
    y = jnp.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"`y` must have shape (num_points,), got shape {y.shape}.")
    num_points = y.shape[0]
    observation_sd = broadcast_per_row(observation_sd, "observation_sd", num_points, y.dtype)
    mask = check_mask(mask, num_points, "y")
    upper_confidence = y + jnp.asarray(beta, y.dtype) * observation_sd
    return mask & (upper_confidence >= trim_level(y, observation_sd, mask, threshold, beta=beta))


def trim_level(
    y: Float[ArrayLike, " N"],
    observation_sd: Float[ArrayLike, "*N"],
    mask: Bool[ArrayLike, " N"],
    threshold: Float[ArrayLike, ""],
    *,
    beta: Float[ArrayLike, ""] = 1.96,
) -> Float[Array, ""]:
    """The level y⋆ = max_m lcb_m − η below which `trim_mask` removes a row (its ucb_n < y⋆);
    the arguments are those of `trim_mask`, already validated."""
    y = jnp.asarray(y)
    lower_confidence = y - jnp.asarray(beta, y.dtype) * observation_sd
    best_lower_confidence = jnp.max(jnp.where(mask, lower_confidence, -jnp.inf))
    return best_lower_confidence - jnp.asarray(threshold, y.dtype)
