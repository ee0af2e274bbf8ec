import math

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._linalg import cholesky, cholesky_solve, log_determinant, solve_triangular


def diagonal_gaussian_log_prob(
    x: Float[Array, " D"], mean: Float[Array, " D"], variance: Float[Array, " D"]
) -> Float[Array, ""]:
    """log N(x; μ, diag(σ²)) = −½ Σ_d [(x_d − μ_d)²/σ²_d + log σ²_d + log 2π]."""
    return -0.5 * jnp.sum((x - mean) ** 2 / variance + jnp.log(variance) + math.log(2 * math.pi))


def factor_gaussian_log_prob(
    x: Float[Array, " D"], mean: Float[Array, " D"], lower: Float[Array, "D D"]
) -> Float[Array, ""]:
    """log N(x; μ, L Lᵀ) = −½[‖L⁻¹(x − μ)‖² + log|L Lᵀ| + D log 2π] from the lower factor L."""
    whitened = solve_triangular(lower, x - mean)
    return -0.5 * (jnp.sum(whitened**2) + log_determinant(lower) + x.shape[0] * math.log(2 * math.pi))


def gaussian_log_prob(
    x: Float[Array, " D"], mean: Float[Array, " D"], covariance: Float[Array, " D"] | Float[Array, "D D"]
) -> Float[Array, ""]:
    """log N(x; μ, Σ) for a diagonal (D,) or full (D, D) covariance (a full Σ through its
    Cholesky factor, `factor_gaussian_log_prob`)."""
    if covariance.ndim == 1:
        return diagonal_gaussian_log_prob(x, mean, covariance)
    return factor_gaussian_log_prob(x, mean, cholesky(covariance).lower)


def gaussian_entropy(covariance: Float[Array, " D"] | Float[Array, "D D"]) -> Float[Array, ""]:
    """H[N(μ, Σ)] = ½ log|2πe Σ| for a diagonal (D,) or full (D, D) covariance."""
    dimension = covariance.shape[0]
    log_det = jnp.sum(jnp.log(covariance)) if covariance.ndim == 1 else log_determinant(cholesky(covariance).lower)
    return 0.5 * (log_det + dimension * math.log(2 * math.pi * math.e))


def gaussian_kl(
    mean_p: Float[Array, " D"],
    covariance_p: Float[Array, "D D"],
    mean_q: Float[Array, " D"],
    covariance_q: Float[Array, "D D"],
) -> Float[Array, ""]:
    """KL(N(μ_p, Σ_p) ‖ N(μ_q, Σ_q)) = ½[tr(Σ_q⁻¹Σ_p) + δᵀΣ_q⁻¹δ − D + log|Σ_q| − log|Σ_p|], δ = μ_q − μ_p."""
    lower_q = cholesky(covariance_q).lower
    lower_p = cholesky(covariance_p).lower
    difference = mean_q - mean_p
    trace = jnp.trace(cholesky_solve(lower_q, covariance_p))
    mahalanobis = jnp.dot(difference, cholesky_solve(lower_q, difference))
    dimension = mean_p.shape[0]
    return 0.5 * (trace + mahalanobis - dimension + log_determinant(lower_q) - log_determinant(lower_p))
