import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from ..mixtures import AbstractGaussianMixture, MultivariateNormal


def measure_components(
    measure,
) -> tuple[Float[Array, " K"], Float[Array, "K D"], Float[Array, "K D"] | Float[Array, "K D D"], Bool[Array, " K"]]:
    """(weights, means, covariances, mask) of a Gaussian mixture or a single Gaussian.

    Covariances are (K, D) diagonals for diagonal mixture families, (K, D, D) matrices
    for full ones (`AbstractGaussianMixture.component_covariances`) and (1, D, D) for
    `MultivariateNormal`.
    """
    if isinstance(measure, AbstractGaussianMixture):
        return measure.weights, measure.component_means, measure.component_covariances, measure.mask
    if isinstance(measure, MultivariateNormal):
        dtype = measure.location.dtype
        return jnp.ones((1,), dtype), measure.location[None, :], measure.covariance_matrix[None], jnp.ones((1,), bool)
    raise ValueError(
        f"`measure` must be an AbstractGaussianMixture or a MultivariateNormal, got {type(measure).__name__}."
    )


def as_full(covariance: Float[Array, " D"] | Float[Array, "D D"]) -> Float[Array, "D D"]:
    """A (D,) diagonal or (D, D) covariance as a full matrix."""
    return jnp.diag(covariance) if covariance.ndim == 1 else covariance


def is_diagonal(covariances) -> bool:
    """Whether a stacked covariance array holds diagonals ((K, D)) rather than matrices."""
    return covariances.ndim == 2
