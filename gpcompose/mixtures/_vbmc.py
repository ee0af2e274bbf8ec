import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ._base import AbstractGaussianMixture, first_free_slot, logits_after_adding


class VBMCMixture(AbstractGaussianMixture):
    """The VBMC/SVBMC variational family (SVBMC §2.9):

        q(x) = Σ_k w_k N(x; μ_k, σ_k² diag(λ²)),

    with one scale σ_k per component and a shared per-dimension scale λ, all stored
    unconstrained (`logits`, `means`, `log_sigma`, `log_lambda`).
    """

    logits: Float[Array, " K"]
    means: Float[Array, "K D"]
    log_sigma: Float[Array, " K"]
    log_lambda: Float[Array, " D"]
    mask: Bool[Array, " K"]

    @property
    def component_means(self) -> Float[Array, "K D"]:
        return self.means

    @property
    def component_variances(self) -> Float[Array, "K D"]:
        return jnp.exp(2.0 * (self.log_sigma[:, None] + self.log_lambda[None, :]))

    def clip_to_box(self, lower: Float[Array, " D"], upper: Float[Array, " D"]) -> "VBMCMixture":
        """σ_k λ_d ≤ width_d for every d is log σ_k ≤ min_d(log width_d − log λ_d)."""
        means = jnp.clip(self.means, lower[None, :], upper[None, :])
        log_sigma = jnp.minimum(self.log_sigma, jnp.min(jnp.log(upper - lower) - self.log_lambda))
        return VBMCMixture(self.logits, means, log_sigma, self.log_lambda, self.mask)

    def add_component(
        self, weight: Float[ArrayLike, ""], mean: Float[ArrayLike, " D"], sigma: Float[ArrayLike, ""]
    ) -> "VBMCMixture":
        """Put a component N(mean, σ² diag(λ²)) of weight `weight` in the first free slot."""
        slot = eqx.error_if(first_free_slot(self.mask), jnp.all(self.mask), "No free component slot in the mixture.")
        logits = logits_after_adding(self.weights, slot, jnp.asarray(weight, self.means.dtype))
        return VBMCMixture(
            logits,
            self.means.at[slot].set(mean),
            self.log_sigma.at[slot].set(jnp.log(jnp.asarray(sigma, self.means.dtype))),
            self.log_lambda,
            self.mask.at[slot].set(True),
        )
