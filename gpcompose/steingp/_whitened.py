import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._linalg import CholeskyFactor, cholesky, solve_triangular
from ..kernels import AbstractKernel
from ..likelihoods import AbstractLikelihood
from ._model import AbstractSteinGPModel, SteinGPParticle


def jittered_factor(kernel: AbstractKernel, inputs: Float[Array, "M D"], jitter: Float[Array, ""]) -> CholeskyFactor:
    """chol(k(U, U) + jitter · I) through `_linalg.cholesky` (which escalates if it must).

    The fixed jitter (GPflow's default 10⁻⁶) keeps the whitening map smooth
    in θ; the whitened prior is then f_U ~ N(0, K_UU + jitter · I).
    """
    gram = kernel.gram(inputs)
    return cholesky(gram + jitter * jnp.eye(inputs.shape[0], dtype=gram.dtype))


def whitened_conditional(
    lower: Float[Array, "M M"],
    cross: Float[Array, "M Q"],
    diagonal: Float[Array, " Q"],
    latents: Float[Array, " M"],
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """f(x) | f_U = L ν is Gaussian with, for A = L⁻¹ k(U, x),

        mean = Aᵀ ν,   variance = k(x, x) − ‖A‖²   (clamped at 0),

    the conditional of whitened models (Hensman et al. 2015; Pinder, Nemeth & Leslie 2020, §4).
    """
    projected = solve_triangular(lower, cross)
    return projected.T @ latents, jnp.maximum(diagonal - jnp.sum(projected**2, axis=0), 0.0)


class WhitenedModel(AbstractSteinGPModel):
    """SteinGP model (b): any likelihood, particles λ = (θ, ν) with whitened latents
    f = L_θ ν, L_θ = chol(K_θ + jitter · I), ν ~ N(0, I_N) (Pinder, Nemeth & Leslie 2020, §4):

        log p(θ, ν | X, y) = Σ_n log p(y_n | f_n) − ½ νᵀν + log p₀(θ) + log|dθ/du| + const.

    A failed factorisation gives a NaN log density (the SVGD step is skipped and flagged).
    Cost O(N³) per particle and step; every f_n depends on all of ν, so the model does not
    minibatch (use `SparseWhitenedModel`).
    """

    kernel: AbstractKernel
    likelihood: AbstractLikelihood
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    jitter: Float[Array, ""] = eqx.field(converter=jnp.asarray, default=1e-6)

    @property
    def num_latents(self) -> int:
        return self.num_data

    def log_density(self, particle: SteinGPParticle, batch_indices: Int[Array, " B"] | None = None) -> Float[Array, ""]:
        if batch_indices is not None:
            raise ValueError("The whitened SteinGP model does not minibatch: pass `inducing_points` to do so.")
        kernel, likelihood = self.components(particle)
        factor = jittered_factor(kernel, self.X, self.jitter.astype(self.X.dtype))
        latent_values = factor.lower @ particle.latents
        value = jnp.sum(likelihood.log_prob(self.y, latent_values)) + self.log_prior(particle)
        return jnp.where(factor.succeeded, value, jnp.nan)

    def latent_predictive(
        self, particle: SteinGPParticle, X_new: Float[Array, "Q D"]
    ) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """μ = K_{*X} L⁻ᵀ ν, s² = k_** − ‖L⁻¹ K_{X*}‖² (Pinder, Nemeth & Leslie 2020, §4)."""
        kernel, _ = self.components(particle)
        factor = jittered_factor(kernel, self.X, self.jitter.astype(self.X.dtype))
        return whitened_conditional(factor.lower, kernel.cross(self.X, X_new), kernel.diagonal(X_new), particle.latents)
