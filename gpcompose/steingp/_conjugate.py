import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .. import gp
from ..kernels import AbstractKernel
from ..likelihoods import Gaussian
from ..means import Zero
from ._model import AbstractSteinGPModel, SteinGPParticle


class ConjugateModel(AbstractSteinGPModel):
    """SteinGP model (a): Gaussian likelihood, particles over the kernel and noise
    hyperparameters θ only, with f integrated out (Pinder, Nemeth & Leslie 2020, §3):

        log p(θ | X, y) = log N(y; 0, K_θ + σ² I) + log p₀(θ) + log|dθ/du| + const.

    The log marginal likelihood comes from `gpcompose.gp` (Cholesky with the jitter
    policy of `_linalg`); a failed factorisation gives a NaN log density, so that the SVGD
    step is skipped and flagged rather than moved by a placeholder. Cost O(N³) per particle.
    """

    kernel: AbstractKernel
    likelihood: Gaussian
    X: Float[Array, "N D"]
    y: Float[Array, " N"]

    @property
    def num_latents(self) -> None:
        return None

    def _posterior(self, particle: SteinGPParticle) -> gp.ExactPosterior:
        kernel, likelihood = self.components(particle)
        return gp.condition(kernel, Zero(), self.X, self.y, likelihood.variance)

    def log_density(self, particle: SteinGPParticle, batch_indices: Int[Array, " B"] | None = None) -> Float[Array, ""]:
        if batch_indices is not None:
            raise ValueError("The conjugate SteinGP model does not minibatch: pass `inducing_points` to do so.")
        posterior = self._posterior(particle)
        value = gp.log_marginal_likelihood(posterior) + self.log_prior(particle)
        return jnp.where(posterior.factor.succeeded, value, jnp.nan)

    def latent_predictive(
        self, particle: SteinGPParticle, X_new: Float[Array, "Q D"]
    ) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """μ = K_{*X}(K + σ²I)⁻¹y and s² = k_** − K_{*X}(K + σ²I)⁻¹K_{X*} (R&W eqs. 2.25–2.26)."""
        return gp.predict(self._posterior(particle), X_new)
