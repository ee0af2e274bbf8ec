import math

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._jit import public_jit
from .._linalg import log_determinant
from .._observations import centred_targets
from ._posterior import ExactPosterior


@public_jit()
def log_marginal_likelihood(posterior: ExactPosterior) -> Float[Array, ""]:
    """log N(y; m(X), K + D) = −½ (y − m)ᵀ(K + D)⁻¹(y − m) − ½ log|K + D| − (n/2) log 2π.

    Unused buffer slots contribute nothing (their factor rows are the identity).
    Differentiable in the kernel, mean and noise parameters through `condition`.
    """
    residual = centred_targets(posterior.mean, posterior.observations)
    num_used = posterior.observations.num_used.astype(residual.dtype)
    return (
        -0.5 * jnp.dot(residual, posterior.weights)
        - 0.5 * log_determinant(posterior.factor.lower)
        - 0.5 * num_used * math.log(2 * math.pi)
    )
