"""Bayesian quadrature of a GP posterior against Gaussians and Gaussian mixtures.

For I_k = ∫ f(x) N(x; μ_k, Σ_k) dx with f a GP posterior:

exact GP (Naiff 2019, eq. 4.5, sign corrected), with z_k = E_k[k(x, X)] and Γ_{jk}:
    E[I_k] = ∫ m N_k + z_kᵀ (K + D)⁻¹ (y − m(X)),
    Cov(I_j, I_k) = Γ_{jk} − z_jᵀ (K + D)⁻¹ z_k = Γ_{jk} − (L⁻¹z_j)ᵀ(L⁻¹z_k);

sparse GP (Li et al. 2023, eqs. S14–S15), with z_k = E_k[k(x, Z)], a = L⁻¹z, b = L_S⁻¹a, c = L_S⁻¹r:
    E[I_k] = ∫ m N_k + b_kᵀ c,
    Cov(I_j, I_k) = Γ_{jk} − a_jᵀa_k + b_jᵀb_k   (K_ZZ⁻¹ − Σ = L⁻ᵀ(I − S⁻¹)L⁻¹).

For the mixture integral I = Σ_k w_k I_k: E[I] = wᵀE[I_k], Var[I] = wᵀ Cov w.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._jit import public_jit
from .._posterior_interface import AbstractGaussianPosterior
from ._embeddings import component_kernel_double_means, component_kernel_means
from ._mean_integrals import component_mean_integrals
from ._measures import measure_components


@public_jit(static_argnames=("degree",))
def integrate_components(
    posterior: AbstractGaussianPosterior, measure, *, degree: int | None = None
) -> tuple[Float[Array, " K"], Float[Array, "K K"]]:
    """Mean (K,) and covariance (K, K) of the per-component integrals I_k = ∫ f N_k."""
    if not isinstance(posterior, AbstractGaussianPosterior):
        raise ValueError(f"`posterior` must be a Gaussian posterior (exact or sparse), got {type(posterior).__name__}.")
    _, means, covariances, _ = measure_components(measure)
    support, used = posterior.support
    if means.shape[1] != support.shape[1]:
        raise ValueError(
            f"`measure` has dimension {means.shape[1]} but the posterior's inputs have {support.shape[1]}."
        )
    mean_part = component_mean_integrals(posterior.mean, means, covariances, degree)
    double = component_kernel_double_means(posterior.kernel, measure, measure, degree=degree)
    embeddings = component_kernel_means(posterior.kernel, measure, support, degree=degree)
    shift, reduction = posterior.functional_moments(jnp.where(used[None, :], embeddings, 0.0))
    return mean_part + shift, double - reduction


@public_jit(static_argnames=("degree",))
def integrate(
    posterior: AbstractGaussianPosterior, measure, *, degree: int | None = None
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Posterior mean and variance of ∫ f(x) q(x) dx for a Gaussian or Gaussian-mixture q.

    The variance is clamped at 0 (it can round slightly negative).
    """
    weights = measure_components(measure)[0]
    means, covariance = integrate_components(posterior, measure, degree=degree)
    return weights @ means, jnp.maximum(weights @ covariance @ weights, 0.0)
