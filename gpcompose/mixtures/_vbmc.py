import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import error_if
from .._select import select_tree
from ._base import AbstractGaussianMixture, first_free_slot, logits_after_adding


class VBMCMixture(AbstractGaussianMixture):
    """The VBMC/SVBMC variational family (Li, Clarté & Acerbi 2023, §3.3 and App. A.5):

        q(x) = Σ_k w_k N(x; μ_k, σ_k² S Sᵀ),

    with one scale σ_k per component and a shared scale matrix S, all stored
    unconstrained (`logits`, `means`, `log_sigma`, `log_lambda`, `lambda_offdiagonal`).

    - Without `lambda_offdiagonal` (None), S = diag(λ): the family of Li et al. 2023 (eq. S14), every
      component axis-aligned.
    - With it and a True `axis_aligned` flag (a boolean array, so no optimiser moves it),
      S = diag(λ) too and the off-diagonal entries get no gradient: the axis-aligned
      family in the rotated family's pytree, so that one buffer state can hold either
      and a traced choice (SVBMC's family choice at `init`) can pick between them.
    - With it, S = diag(λ)(I + B), B strictly lower triangular with the D(D − 1)/2
      entries of `lambda_offdiagonal` in row-major order (`jnp.tril_indices(D, −1)`;
      dimensionless), so S is any lower-triangular matrix with positive diagonal λ and
      every component shares one orientation. This is VBMC's rotoscaling of the
      inference space (Acerbi 2020, "variational whitening"), learned with the ELBO
      instead of fixed between iterations: posteriors with strong linear correlations
      need one rotated component, where axis-aligned ones need many.
    """

    logits: Float[Array, " K"]
    means: Float[Array, "K D"]
    log_sigma: Float[Array, " K"]
    log_lambda: Float[Array, " D"]
    mask: Bool[Array, " K"]
    lambda_offdiagonal: Float[Array, " P"] | None = None
    axis_aligned: Bool[Array, ""] | None = None  # only with `lambda_offdiagonal`; None: False

    def __check_init__(self):
        if self.axis_aligned is not None and self.lambda_offdiagonal is None:
            raise ValueError("`axis_aligned` needs `lambda_offdiagonal`: without it the family is axis-aligned.")

    @property
    def is_rotated(self) -> Bool[Array, ""]:
        """Whether the shared scale S may rotate: `lambda_offdiagonal` is set and the
        `axis_aligned` flag (if any) is False."""
        if self.lambda_offdiagonal is None:
            return jnp.asarray(False)
        if self.axis_aligned is None:
            return jnp.asarray(True)
        return ~self.axis_aligned

    @property
    def scale_matrix(self) -> Float[Array, " D"] | Float[Array, "D D"]:
        """S: the vector λ (diagonal family) or the lower-triangular diag(λ)(I + B), with
        B = 0 unless `is_rotated`."""
        lambdas = jnp.exp(self.log_lambda)
        if self.lambda_offdiagonal is None:
            return lambdas
        offdiagonal = jnp.where(self.is_rotated, self.lambda_offdiagonal, 0.0)
        dimension = lambdas.shape[0]
        rows, columns = jnp.tril_indices(dimension, -1)
        unit_lower = jnp.eye(dimension, dtype=lambdas.dtype).at[rows, columns].set(offdiagonal)
        return lambdas[:, None] * unit_lower

    @property
    def component_means(self) -> Float[Array, "K D"]:
        return self.means

    @property
    def component_variances(self) -> Float[Array, "K D"]:
        scale = self.scale_matrix
        row_squares = scale**2 if scale.ndim == 1 else jnp.sum(scale**2, axis=1)
        return jnp.exp(2.0 * self.log_sigma)[:, None] * row_squares[None, :]

    @property
    def component_scales(self) -> Float[Array, "K D"] | Float[Array, "K D D"]:
        scale = self.scale_matrix
        sigma = jnp.exp(self.log_sigma)
        return sigma[:, None] * scale[None, :] if scale.ndim == 1 else sigma[:, None, None] * scale[None]

    def clip_to_box(self, lower: Float[Array, " D"], upper: Float[Array, " D"]) -> "VBMCMixture":
        """σ_k s_d ≤ width_d for every d, with s_d = ‖S_{d,:}‖ the shared marginal scale
        (λ_d for the diagonal family), is log σ_k ≤ min_d(log width_d − log s_d)."""
        means = jnp.clip(self.means, lower[None, :], upper[None, :])
        scale = self.scale_matrix
        log_row_norms = self.log_lambda if scale.ndim == 1 else 0.5 * jnp.log(jnp.sum(scale**2, axis=1))
        log_sigma = jnp.minimum(self.log_sigma, jnp.min(jnp.log(upper - lower) - log_row_norms))
        return eqx.tree_at(lambda mixture: (mixture.means, mixture.log_sigma), self, (means, log_sigma))

    def add_component(
        self, weight: Float[ArrayLike, ""], mean: Float[ArrayLike, " D"], sigma: Float[ArrayLike, ""]
    ) -> "VBMCMixture":
        """Put a component N(mean, σ² S Sᵀ) of weight `weight` in the first free slot.

        Raises at run time if no slot is free."""
        slot = error_if(first_free_slot(self.mask), jnp.all(self.mask), "No free component slot in the mixture.")
        return self._with_component_at(slot, weight, mean, sigma)

    def add_component_if_room(
        self, weight: Float[ArrayLike, ""], mean: Float[ArrayLike, " D"], sigma: Float[ArrayLike, ""]
    ) -> "VBMCMixture":
        """`add_component` where a slot is free, else the mixture unchanged. It has no run-time
        check, so it can sit in a branch of `lax.cond` under `vmap`, where both branches run for
        every batch member (a check in the untaken branch would raise)."""
        added = self._with_component_at(first_free_slot(self.mask), weight, mean, sigma)
        has_room = ~jnp.all(self.mask)
        return select_tree(has_room, added, self)

    def _with_component_at(self, slot, weight, mean, sigma) -> "VBMCMixture":
        """The mixture with N(mean, σ² S Sᵀ) of weight `weight` at `slot` and the other weights
        scaled by 1 − weight; `slot` is assumed free (the callers check or select)."""
        logits = logits_after_adding(self.weights, slot, jnp.asarray(weight, self.means.dtype))
        return eqx.tree_at(
            lambda mixture: (mixture.logits, mixture.means, mixture.log_sigma, mixture.mask),
            self,
            (
                logits,
                self.means.at[slot].set(mean),
                self.log_sigma.at[slot].set(jnp.log(jnp.asarray(sigma, self.means.dtype))),
                self.mask.at[slot].set(True),
            ),
        )

    def affine_image(self, shift: Float[ArrayLike, " D"], factor: Float[ArrayLike, "D D"]) -> "VBMCMixture":
        """The law of m + L x for x ~ q, with `shift` m and a lower-triangular `factor` L
        with positive diagonal: components N(m + L μ_k, σ_k² (L S)(L S)ᵀ). L S is lower
        triangular with diagonal L_dd λ_d, so the image is in the rotated family
        (`lambda_offdiagonal` set, not `axis_aligned`) with λ' = diag(L S) and
        B' = diag(λ')⁻¹ L S − I."""
        shift = jnp.asarray(shift, self.means.dtype)
        factor = jnp.asarray(factor, self.means.dtype)
        scale = self.scale_matrix
        image_scale = factor * scale[None, :] if scale.ndim == 1 else factor @ scale
        image_lambda = jnp.diag(image_scale)
        rows, columns = jnp.tril_indices(self.dimension, -1)
        offdiagonal = (image_scale / image_lambda[:, None])[rows, columns]
        return VBMCMixture(
            logits=self.logits,
            means=shift[None, :] + self.means @ factor.T,
            log_sigma=self.log_sigma,
            log_lambda=jnp.log(image_lambda),
            mask=self.mask,
            lambda_offdiagonal=offdiagonal,
        )
