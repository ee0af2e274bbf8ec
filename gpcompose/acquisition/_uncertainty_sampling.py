import jax.numpy as jnp
from jaxtyping import Array, Float

from .._posterior_interface import AbstractPosterior
from ..mixtures import AbstractGaussianMixture


def log_prospective_uncertainty(
    posterior: AbstractPosterior, mixture: AbstractGaussianMixture, x: Float[Array, " D"]
) -> Float[Array, ""]:
    """log a₁(x) = log s²(x) + log q(x) + f̄(x), prospective uncertainty sampling.

    a₁(x) = s²(x) q_φ(x) exp(f̄(x)) (Li et al. 2023, eq. 1; VBMC's a_pro) with f̄, s² the latent
    posterior mean and variance of the GP model of the log density. Computed in log
    space; a zero variance (at a noiseless training point) gives a large negative
    finite value rather than −∞, so gradients stay finite.

    For a sparse posterior s² is the reducible variance (`sparse.reducible_variance`):
    the SGPR variance less the floor that the jitter of K_ZZ leaves even at an inducing
    input [ours]. With the floor, s² is flat where the data are dense and a₁'s maximiser
    stays at the top of q·exp(f̄) however often it is evaluated there.
    """
    mean, variance = posterior.reducible_predict(x[None, :])
    tiny = jnp.finfo(variance.dtype).tiny
    return jnp.log(jnp.maximum(variance[0], tiny)) + mixture.log_prob(x) + mean[0]
