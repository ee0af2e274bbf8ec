import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._linalg import cholesky
from ..means import AbstractMean, Constant, NegativeQuadratic, Zero
from ._gauss_hermite import default_degree, standard_normal_nodes
from ._measures import is_diagonal


def component_mean_integrals(mean: AbstractMean, means, covariances, degree: int | None = None) -> Float[Array, " K"]:
    """∫ m(x) N(x; μ_k, Σ_k) dx for every component.

    Zero and Constant are exact; the negative quadratic mean integrates to
    m₀ − ½ Σ_d [(μ_{k,d} − c_d)² + Σ_{k,dd}] / ω_d² (the mean of Li, Clarté & Acerbi 2023, eq. S4; BVBMC eq. 5.51 with
    the missing weights restored when summed); other means use Gauss–Hermite.
    """
    diagonals = covariances if is_diagonal(covariances) else jnp.diagonal(covariances, axis1=1, axis2=2)
    if isinstance(mean, Zero):
        return jnp.zeros(means.shape[0], means.dtype)
    if isinstance(mean, Constant):
        return jnp.broadcast_to(mean.constant.value, means.shape[:1])
    if isinstance(mean, NegativeQuadratic):
        location = jnp.broadcast_to(mean.location.value, means.shape[1:])[None, :]
        scale = jnp.broadcast_to(mean.scale.value, means.shape[1:])[None, :]
        squared = (means - location) ** 2 + diagonals
        return mean.maximum.value - 0.5 * jnp.sum(squared / scale**2, axis=1)
    dimension = means.shape[1]
    degree = default_degree(dimension) if degree is None else degree
    nodes, weights = standard_normal_nodes(dimension, degree, means.dtype)

    def one(component_mean, covariance):
        if covariance.ndim == 1:
            points = component_mean[None, :] + nodes * jnp.sqrt(covariance)[None, :]
        else:
            points = component_mean[None, :] + nodes @ cholesky(covariance).lower.T
        return weights @ mean(points)

    return jax.vmap(one)(means, covariances)
