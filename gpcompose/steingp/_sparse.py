import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ..kernels import AbstractKernel
from ..likelihoods import AbstractLikelihood
from ._model import AbstractSteinGPModel, SteinGPParticle
from ._whitened import jittered_factor, whitened_conditional


class SparseWhitenedModel(AbstractSteinGPModel):
    """SteinGP model (c): inducing inputs Z (fixed), particles λ = (θ, ν) with whitened
    inducing values u = L_Z ν, L_Z = chol(K_ZZ + jitter · I), ν ~ N(0, I_M) (Pinder, Nemeth & Leslie 2020, §3–4,
    eq. 10; the per-point term, which the paper leaves to Hensman et al. 2015, is that of GPflow's SGPMC):

        log p(θ, ν | X, y) ≈ Σ_n E_{N(f_n; q_n, v_n)}[log p(y_n | f_n)] − ½ νᵀν + log p₀(θ) + log|dθ/du|,
        q_n = k(x_n, Z) L_Z⁻ᵀ ν,   v_n = k(x_n, x_n) − ‖L_Z⁻¹ k(Z, x_n)‖².

    Each data term depends on its own point only, so a minibatch B drawn uniformly gives
    the unbiased estimate with the data sum replaced by (N/|B|) Σ_{n∈B} (eq. 10). The
    expectation is closed form for a Gaussian likelihood and Gauss–Hermite otherwise
    (`likelihood.expected_log_prob`). Cost O(|B| M² + M³) per particle and step.
    """

    kernel: AbstractKernel
    likelihood: AbstractLikelihood
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    inducing_points: Float[Array, "M D"]
    jitter: Float[Array, ""] = eqx.field(converter=jnp.asarray, default=1e-6)

    @property
    def num_latents(self) -> int:
        return self.inducing_points.shape[0]

    def _conditional(self, particle: SteinGPParticle, X_new: Float[Array, "Q D"]):
        kernel, likelihood = self.components(particle)
        factor = jittered_factor(kernel, self.inducing_points, self.jitter.astype(self.X.dtype))
        cross = kernel.cross(self.inducing_points, X_new)
        mean, variance = whitened_conditional(factor.lower, cross, kernel.diagonal(X_new), particle.latents)
        return likelihood, factor, mean, variance

    def log_density(self, particle: SteinGPParticle, batch_indices: Int[Array, " B"] | None = None) -> Float[Array, ""]:
        if batch_indices is None:
            inputs, targets, scale = self.X, self.y, 1.0
        else:
            inputs, targets = self.X[batch_indices], self.y[batch_indices]
            scale = self.num_data / batch_indices.shape[0]
        likelihood, factor, mean, variance = self._conditional(particle, inputs)
        data_term = scale * jnp.sum(likelihood.expected_log_prob(targets, mean, variance))
        return jnp.where(factor.succeeded, data_term + self.log_prior(particle), jnp.nan)

    def latent_predictive(
        self, particle: SteinGPParticle, X_new: Float[Array, "Q D"]
    ) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """q(x) = k(x, Z) L_Z⁻ᵀ ν and v(x) = k(x, x) − ‖L_Z⁻¹ k(Z, x)‖²."""
        _, _, mean, variance = self._conditional(particle, X_new)
        return mean, variance
