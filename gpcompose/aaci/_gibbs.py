import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from .._errors import RESULTS
from .._validation import check_inputs, check_targets, require_finite
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean, Zero
from ._local import natural_targets
from ._natural_step import strong_types
from ._validation import check_model
from ._variational import Projection, inducing_factor, project


class GibbsState(eqx.Module):
    """The current latent values f and auxiliary variables ω, the cached factorisation of the prior
    (`projection`: f = μ₀ + L v with K = L Lᵀ) and the step count."""

    latent: Float[Array, " N"]
    omega: Float[Array, " N"]
    projection: Projection
    num_steps: Int[Array, ""]


class GibbsInfo(eqx.Module):
    """The draw of one sweep (`gpcompose.run` stacks them into the chain) and the factorisation's result."""

    latent: Float[Array, " N"]
    omega: Float[Array, " N"]
    result: RESULTS


class Gibbs(eqx.Module):
    """The exact Gibbs sampler of the augmented model (Galy-Fajou et al. 2020, Alg. 2, Theorem 2):

        ω_i | f_i ~ π(ω | c_i), c_i = |h(f_i, y_i)|           (`likelihood.sample_omega`)
        f | ω, y ~ N(μ, Σ),  Σ = (K⁻¹ + diag(2ω ∘ γ))⁻¹,  μ = Σ(K⁻¹μ₀ + g + ω ∘ β).

    The f-step draws v = L⁻¹(f − μ₀) from N(P⁻¹η₁, P⁻¹) with P = I + Lᵀ diag(2ωγ) L through one
    Cholesky factorisation of P (eigenvalues ≥ 1; no K⁻¹), O(N³) per sweep. The prior factor L is
    computed once by `init`. Chains are independent under `vmap` over keys.

    **Fields:** `kernel`, `likelihood` (with an ω sampler) and `mean` (default `Zero()`).
    """

    kernel: AbstractKernel
    likelihood: AbstractSuperGaussianLikelihood
    mean: AbstractMean = eqx.field(default_factory=Zero)

    def __check_init__(self):
        check_model(self.kernel, self.likelihood, self.mean, None)

    def init(self, X: Float[ArrayLike, "N D"], *, key: PRNGKeyArray) -> GibbsState:
        """A state at a draw of f from the prior at the training inputs `X`."""
        X = require_finite(check_inputs(X, "X"), "X")
        projection = project(self.kernel, self.mean, X, inducing_factor(self.kernel, X), X)
        latent = projection.prior_mean + projection.matrix @ jax.random.normal(key, (X.shape[0],), X.dtype)
        return strong_types(GibbsState(latent, jnp.zeros_like(latent), projection, jnp.zeros((), jnp.int32)))

    def step(self, state: GibbsState, key: PRNGKeyArray, y: Float[ArrayLike, " N"]) -> tuple[GibbsState, GibbsInfo]:
        """One sweep: ω | f, then f | ω."""
        y = self.likelihood.targets(require_finite(check_targets(y, "y", state.latent.shape[0]), "y"))
        omega_key, latent_key = jax.random.split(key)
        omega = self.likelihood.sample_omega(omega_key, self.likelihood.squared_h(y, state.latent))
        conditional = natural_targets(self.likelihood, y, state.projection, omega, jnp.ones((), y.dtype))
        latent = state.projection.prior_mean + state.projection.matrix @ conditional.sample(latent_key)
        result = RESULTS.where(
            conditional.precision_factor().succeeded, state.projection.result, RESULTS.cholesky_failed
        )
        new_state = GibbsState(latent, omega, state.projection, state.num_steps + 1)
        return new_state, GibbsInfo(latent, omega, result)
