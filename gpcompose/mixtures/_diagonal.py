import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import error_if
from .._validation import as_floating, check_mask, raise_if, require_positive
from ._base import AbstractGaussianMixture, first_free_slot, logits_after_adding


class GaussianMixture(AbstractGaussianMixture):
    """Mixture of diagonal-covariance Gaussians, unconstrained parameters:

        w = softmax(logits),  μ_k = means[k],  σ_{k,d} = exp(log_scales[k, d]).

    Build one from moments with `GaussianMixture.from_moments(weights, means, variances)`.
    """

    logits: Float[Array, " K"]
    means: Float[Array, "K D"]
    log_scales: Float[Array, "K D"]
    mask: Bool[Array, " K"]

    @classmethod
    def from_moments(
        cls,
        weights: Float[ArrayLike, " K"],
        means: Float[ArrayLike, "K D"],
        variances: Float[ArrayLike, "K D"],
        mask: Bool[ArrayLike, " K"] | None = None,
    ) -> "GaussianMixture":
        """Mixture with the given weights (K,), means (K, D) and diagonal variances (K, D).

        `mask` marks active components (default all; at least one, else a `ValueError`, or
        `eqx.error_if` under `jit`); weights of inactive components are ignored and the
        active ones are renormalised.
        """
        means = as_floating(means, "means")
        if means.ndim != 2:
            raise ValueError(f"`means` must have shape (K, D), got shape {means.shape}.")
        num_components = means.shape[0]
        weights = as_floating(weights, "weights").astype(means.dtype)
        variances = as_floating(variances, "variances").astype(means.dtype)
        if weights.shape != (num_components,):
            raise ValueError(f"`weights` must have shape ({num_components},), got shape {weights.shape}.")
        if variances.shape != means.shape:
            raise ValueError(f"`variances` must have the shape of `means` {means.shape}, got shape {variances.shape}.")
        mask = check_mask(mask, num_components)
        mask = raise_if(mask, ~jnp.any(mask), "`mask` must mark at least one component as active, got all False.")
        weights = require_positive(jnp.where(mask, weights, 1.0), "weights")
        variances = require_positive(variances, "variances")
        return cls(jnp.log(weights), means, 0.5 * jnp.log(variances), mask)

    @property
    def component_means(self) -> Float[Array, "K D"]:
        return self.means

    @property
    def component_variances(self) -> Float[Array, "K D"]:
        return jnp.exp(2.0 * self.log_scales)

    def clip_to_box(self, lower: Float[Array, " D"], upper: Float[Array, " D"]) -> "GaussianMixture":
        means = jnp.clip(self.means, lower[None, :], upper[None, :])
        log_scales = jnp.minimum(self.log_scales, jnp.log(upper - lower)[None, :])
        return GaussianMixture(self.logits, means, log_scales, self.mask)

    def add_component(
        self, weight: Float[ArrayLike, ""], mean: Float[ArrayLike, " D"], variance: Float[ArrayLike, " D"]
    ) -> "GaussianMixture":
        """Put a new component of weight `weight` in the first free slot; others shrink by 1 − w.

        Raises at run time if no slot is free.
        """
        slot = error_if(first_free_slot(self.mask), jnp.all(self.mask), "No free component slot in the mixture.")
        logits = logits_after_adding(self.weights, slot, jnp.asarray(weight, self.means.dtype))
        return GaussianMixture(
            logits,
            self.means.at[slot].set(mean),
            self.log_scales.at[slot].set(0.5 * jnp.log(jnp.asarray(variance, self.means.dtype))),
            self.mask.at[slot].set(True),
        )
