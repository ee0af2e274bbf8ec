"""Noise shaping: artificial, density-dependent observation noise (Li, Clarté & Acerbi 2023, eq. S17).

Used by SVBMC for its training rows and by BVBMC for its censored failed evaluations.

Low-density training points get a larger total noise variance, so the sparse GP (and the
greedy inducing-point selection, whose weights are 1/σ²_tot) spends its capacity on the
high-density region that matters for the posterior.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ._jit import public_jit
from ._validation import broadcast_per_row, check_mask


def floating_dtype(*arrays: Array):
    """The floating dtype shared by `arrays` (the default float when they are all integers)."""
    for array in arrays:
        if jnp.issubdtype(array.dtype, jnp.floating):
            return array.dtype
    return jax.dtypes.canonicalize_dtype(float)


@public_jit()
def shaping_variance(
    delta_y: Float[ArrayLike, "*N"],
    threshold: Float[ArrayLike, ""],
    *,
    minimum_variance: Float[ArrayLike, ""] = 1e-3,
    median_variance: Float[ArrayLike, ""] = 1.0,
    slope: Float[ArrayLike, ""] = 0.05,
) -> Float[Array, "*N"]:
    """Shaping variance σ²_shape(Δy) (Li, Clarté & Acerbi 2023, eq. S17, App. B.3):

        σ²_shape(Δy) = exp{(1 − ρ) log σ²_min + ρ log σ²_med} + 1[Δy ≥ θ] λ² (Δy − θ)²,
        ρ = min(1, Δy/θ),

    with Δy = y_max − y the drop below the best observed log density, θ = `threshold`
    (the paper uses θ = 10 D), σ²_min = `minimum_variance`, σ²_med = `median_variance`
    and λ = `slope`. Geometric interpolation from σ²_min at the mode to σ²_med at Δy = θ,
    then σ_shape grows like λ Δy. Negative Δy is treated as 0. Elementwise; works in the
    dtype of `delta_y`.
    """
    delta_y = jnp.asarray(delta_y)
    dtype = floating_dtype(delta_y)
    delta_y = jnp.maximum(delta_y.astype(dtype), 0.0)
    threshold = jnp.asarray(threshold, dtype)
    ratio = jnp.minimum(1.0, delta_y / threshold)
    log_base = (1.0 - ratio) * jnp.log(jnp.asarray(minimum_variance, dtype)) + ratio * jnp.log(
        jnp.asarray(median_variance, dtype)
    )
    excess = jnp.maximum(delta_y - threshold, 0.0)
    return jnp.exp(log_base) + jnp.asarray(slope, dtype) ** 2 * excess**2


@public_jit()
def total_noise_variance(
    y: Float[ArrayLike, " N"],
    observation_variance: Float[ArrayLike, "*N"],
    mask: Bool[ArrayLike, " N"],
    threshold: Float[ArrayLike, ""],
    *,
    minimum_variance: Float[ArrayLike, ""] = 1e-3,
    median_variance: Float[ArrayLike, ""] = 1.0,
    slope: Float[ArrayLike, ""] = 0.05,
) -> Float[Array, " N"]:
    """Total noise variance σ²_tot,n = σ²_obs,n + σ²_shape(y_max − y_n) (Li, Clarté & Acerbi 2023, §3.5, App. B.3).

    `y` (N,) are the observed log densities, `observation_variance` σ²_obs (scalar or (N,)),
    `mask` (N,) marks used rows and y_max is the maximum of `y` over them. The keywords are
    those of `shaping_variance`. Unused rows return 1.0.
    """
    y = jnp.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"`y` must have shape (num_points,), got shape {y.shape}.")
    num_points = y.shape[0]
    dtype = floating_dtype(y)
    y = y.astype(dtype)
    observation_variance = broadcast_per_row(observation_variance, "observation_variance", num_points, dtype)
    mask = check_mask(mask, num_points, "y")
    y_max = jnp.max(jnp.where(mask, y, -jnp.inf))
    delta_y = jnp.where(mask, y_max - y, 0.0)
    shaping = shaping_variance(
        delta_y,
        threshold,
        minimum_variance=minimum_variance,
        median_variance=median_variance,
        slope=slope,
    )
    return jnp.where(mask, observation_variance + shaping, 1.0)
