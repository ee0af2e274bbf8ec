import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._jit import public_jit
from ..gp import ExactPosterior
from ..mixtures import AbstractGaussianMixture
from ..sparse import SparsePosterior
from ._integrate import integrate


@public_jit(static_argnames=("num_entropy_samples",))
def elbo(
    posterior: ExactPosterior | SparsePosterior,
    mixture: AbstractGaussianMixture,
    key: PRNGKeyArray,
    num_entropy_samples: int,
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Surrogate ELBO of a mixture q against a GP model f of the log joint (Acerbi 2018;
    Li, Clarté & Acerbi 2023, eq. S14):

        ELBO = E_f[∫ q f] + H[q],

    with the expected log joint by Bayesian quadrature and the entropy by stratified
    reparameterised Monte Carlo (⌈num_entropy_samples / K⌉ draws per component), so the
    mean is differentiable in every mixture parameter, weights included.

    **Returns:** `(mean, sd)`; `sd` is the GP's posterior standard deviation of the
    expected log joint (the `elbo_sd` of VBMC), not the Monte Carlo error of the entropy.
    """
    if not isinstance(mixture, AbstractGaussianMixture):
        raise ValueError(f"`mixture` must be an AbstractGaussianMixture, got {type(mixture).__name__}.")
    if num_entropy_samples < 1:
        raise ValueError(f"`num_entropy_samples` must be positive, got {num_entropy_samples}.")
    per_component = -(-num_entropy_samples // mixture.num_components)
    expected_log_joint, variance = integrate(posterior, mixture)
    entropy = mixture.entropy(key, per_component)
    return expected_log_joint + entropy, jnp.sqrt(variance)
