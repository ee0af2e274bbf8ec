import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float


def upper_confidence_bound(
    mean: Float[ArrayLike, "*shape"], variance: Float[ArrayLike, "*shape"], beta: Float[ArrayLike, ""]
) -> Float[Array, "*shape"]:
    """GP-UCB (Srinivas et al. 2010): μ + √β σ. Nguyen et al. (2021) give no β_t;
    its predecessor code uses β_t = log t."""
    mean = jnp.asarray(mean)
    return mean + jnp.sqrt(beta) * jnp.sqrt(jnp.maximum(jnp.asarray(variance, mean.dtype), 0.0))
