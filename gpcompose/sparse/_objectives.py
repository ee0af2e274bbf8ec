import math

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._jit import public_jit
from .._observations import centred_targets
from ._posterior import SparsePosterior, noise_precision


@public_jit()
def elbo(posterior: SparsePosterior) -> Float[Array, ""]:
    """Collapsed Titsias bound with heteroskedastic noise (Li et al. 2023, eq. S18, stable form C.3):

        𝓛 = log N(y; m(X), Q + D) − ½ Tr((K − Q) D⁻¹)
          = −(n/2) log 2π − Σ_j log (L_S)_jj − ½ Σ_n log σ²_n − ½ ȳᵀD⁻¹ȳ + ½ cᵀc
            − ½ Σ_n k_nn/σ²_n + ½ Tr(R Rᵀ),

    with Tr(R Rᵀ) = ‖L_S‖²_F − M (since L_S L_Sᵀ = I + R Rᵀ). The last line of Li et al. 2023
    has −½cᵀc; the correct sign is +. 𝓛 ≤ log marginal likelihood, with equality at Z = X.
    """
    observations = posterior.observations
    precision = noise_precision(observations)
    residual = centred_targets(posterior.mean, observations)
    prior_variance = posterior.kernel.diagonal(observations.inputs)
    inner_lower = posterior.inner_lower
    nystrom_trace = jnp.sum(inner_lower**2) - inner_lower.shape[0]
    c = posterior.inner_weights
    return (
        -0.5 * observations.num_used.astype(residual.dtype) * math.log(2 * math.pi)
        - jnp.sum(jnp.log(jnp.diag(inner_lower)))
        - 0.5 * jnp.sum(jnp.where(observations.mask, jnp.log(observations.noise_variance), 0.0))
        - 0.5 * jnp.sum(precision * residual**2)
        + 0.5 * jnp.dot(c, c)
        - 0.5 * jnp.sum(precision * prior_variance)
        + 0.5 * nystrom_trace
    )
