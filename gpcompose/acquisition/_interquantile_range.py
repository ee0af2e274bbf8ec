import math

import jax.numpy as jnp
from jax.scipy.special import logsumexp, ndtri
from jaxtyping import Array, Float

from .._posterior_interface import AbstractPosterior


def log_sinh(z: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
    """log sinh z = z + log1p(−e^{−2z}) − log 2 for z ≥ 0 (−∞ at 0), without overflow."""
    return z + jnp.log1p(-jnp.exp(-2.0 * z)) - math.log(2.0)


def log_expected_interquantile_range(
    posterior: AbstractPosterior,
    x: Float[Array, " D"],
    reference_points: Float[Array, "S D"],
    noise_variance: Float[Array, ""],
    *,
    quantile: float = 0.75,
) -> Float[Array, ""]:
    """log E_{x′~q}[sinh(α s⋆(x′; x))], the loss behind the IMIQR/VIQR acquisition a₂.

    a₂(x) = −2 ∫ q(x′) sinh(α s⋆(x′; x)) dx′ (Li et al. 2023, eq. 2), α = Φ⁻¹(`quantile`), with
    s⋆(x′; x) the latent standard deviation at x′ after a hypothetical observation at x
    with noise variance `noise_variance` (rank-1 look-ahead, no refit). The integral is
    a Monte Carlo average over `reference_points` drawn from q (as PyVBMC's `AcqFcnVIQR`);
    log sinh and a log-sum-exp keep it finite for any s⋆. Maximising a₂ is minimising
    this value.
    """
    alpha = ndtri(jnp.asarray(quantile, reference_points.dtype))
    variance = posterior.lookahead_variance(reference_points, x, noise_variance)
    tiny = jnp.finfo(variance.dtype).tiny
    scaled_sd = alpha * jnp.sqrt(jnp.maximum(variance, tiny))
    return logsumexp(log_sinh(scaled_sd)) - math.log(reference_points.shape[0])
