import math

import jax.numpy as jnp
from jax.scipy.special import log_ndtr
from jaxtyping import Array, ArrayLike, Float


def max_value_entropy_search(
    mean: Float[ArrayLike, ""], variance: Float[ArrayLike, ""], max_values: Float[ArrayLike, " K"]
) -> Float[Array, ""]:
    """MES (Wang & Jegelka 2017, eq. 6): (1/K) Σ_k [γ_k φ(γ_k)/(2Φ(γ_k)) − log Φ(γ_k)],
    γ_k = (y*_k − μ)/σ, with y*_k samples of the maximum (e.g. pathwise sample maxima).
    φ/Φ and log Φ go through `log_ndtr`, so far tails stay finite."""
    mean = jnp.asarray(mean)
    sd = jnp.sqrt(jnp.maximum(jnp.asarray(variance, mean.dtype), jnp.finfo(mean.dtype).tiny))
    gamma = (jnp.asarray(max_values, mean.dtype) - mean) / sd
    log_cdf = log_ndtr(gamma)
    log_density = -0.5 * gamma**2 - 0.5 * math.log(2 * math.pi)
    return jnp.mean(0.5 * gamma * jnp.exp(log_density - log_cdf) - log_cdf)
