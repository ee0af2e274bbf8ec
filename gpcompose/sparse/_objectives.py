import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import solve_triangular
from .._observations import centred_targets, padded_gram
from ._posterior import SparsePosterior, inducing_cross, noise_precision


def _value(posterior: SparsePosterior) -> Float[Array, ""]:
    """The collapsed bound from the cached factors (`elbo`'s formula)."""
    observations = posterior.observations
    precision = noise_precision(observations)
    residual = centred_targets(posterior.mean, observations)
    prior_variance = posterior.kernel.diagonal(observations.inputs)
    inner_lower = posterior.inner_lower
    nystrom_trace = jnp.sum(inner_lower**2) - inner_lower.shape[0]
    c = posterior.inner_weights
    return (
        -0.5 * observations.num_used.astype(residual.dtype) * math.log(2 * math.pi)
        - jnp.sum(jnp.log(jnp.diag(inner_lower)))
        - 0.5 * jnp.sum(jnp.where(observations.mask, jnp.log(observations.noise_variance), 0.0))
        - 0.5 * jnp.sum(precision * residual**2)
        + 0.5 * jnp.dot(c, c)
        - 0.5 * jnp.sum(precision * prior_variance)
        + 0.5 * nystrom_trace
    )


@jax.custom_jvp
def _collapsed_bound(
    inducing_gram: Float[Array, "M M"],
    cross: Float[Array, "M C"],
    prior_variance: Float[Array, " C"],
    noise_variance: Float[Array, " C"],
    residual: Float[Array, " C"],
    posterior: SparsePosterior,
    used: Bool[Array, " C"],
    factors_succeeded: Bool[Array, ""],
) -> Float[Array, ""]:
    """The bound of `posterior` as a function of A = K_ZZ + εI (`inducing_gram`), P = K_ZX
    (`cross`), diag K_XX, σ² and ȳ, whose factors `posterior` caches (not recomputed)."""
    del inducing_gram, cross, prior_variance, noise_variance, residual, used, factors_succeeded
    return _value(posterior)


@_collapsed_bound.defjvp
def _collapsed_bound_jvp(primals, tangents):
    """d𝓛 = tr(G_A dA) + tr(G_Pᵀ dP) + g_k·dk + g_σ²·dσ² + g_ȳ·dȳ, from the form of the bound

        𝓛 = −½ log|C| + ½ log|A| − ½ log|D| − ½ ȳᵀBȳ + ½ vᵀC⁻¹v − ½ Σ_n b_n k_nn + ½ tr(A⁻¹PBPᵀ)

    (Titsias 2009, eq. 9, with B = D⁻¹ = diag(b), C = A + PBPᵀ, v = PBȳ; the derivatives of
    GPy's variational DTC inference, Hensman et al.). With w = C⁻¹v, e = ȳ − Pᵀw and
    Δ = A⁻¹ − C⁻¹:

        G_A  = ½ (Δ − wwᵀ − A⁻¹PBPᵀA⁻¹),      G_P = ΔPB + w (b ∘ e)ᵀ,
        g_k  = −½ b,                           g_ȳ = −b ∘ e,
        ∂𝓛/∂b_n = −½ e_n² − ½ k_nn + ½ p_nᵀΔp_n,   ∂𝓛/∂σ²_n = −½ b_n − b_n² ∂𝓛/∂b_n.

    A⁻¹ and C⁻¹ = L⁻ᵀL_S⁻ᵀL_S⁻¹L⁻¹ are M × M, and PBPᵀ = L(L_S L_Sᵀ − I)Lᵀ, so the cost beyond
    the forward pass is one M × M by M × N product, ΔP; reverse mode never passes through the
    factorisations (their tangents are not used). Zero where a factorisation failed."""
    inducing_gram, cross, prior_variance, noise_variance, residual, posterior, used, factors_succeeded = primals
    gram_dot, cross_dot, prior_variance_dot, noise_variance_dot, residual_dot = tangents[:5]
    value = _collapsed_bound(*primals)
    lower, inner_lower = posterior.inducing_factor.lower, posterior.inner_lower
    identity = jnp.eye(lower.shape[0], dtype=lower.dtype)
    lower_inverse = solve_triangular(lower, identity)
    gram_inverse = lower_inverse.T @ lower_inverse
    both_inverse = solve_triangular(inner_lower, lower_inverse)
    total_inverse = both_inverse.T @ both_inverse  # C⁻¹
    projected = lower @ (inner_lower @ inner_lower.T - identity) @ lower.T  # PBPᵀ
    precision = jnp.where(used, 1.0 / noise_variance, 0.0)
    w = total_inverse @ (cross @ (precision * residual))
    error = residual - cross.T @ w
    difference = gram_inverse - total_inverse
    difference_cross = difference @ cross
    gram_sensitivity = 0.5 * (difference - jnp.outer(w, w) - gram_inverse @ projected @ gram_inverse)
    cross_sensitivity = difference_cross * precision[None, :] + jnp.outer(w, precision * error)
    precision_sensitivity = -0.5 * error**2 - 0.5 * prior_variance + 0.5 * jnp.sum(cross * difference_cross, axis=0)
    noise_sensitivity = jnp.where(used, -0.5 * precision - precision**2 * precision_sensitivity, 0.0)
    tangent = (
        jnp.sum(gram_sensitivity * gram_dot)
        + jnp.sum(cross_sensitivity * cross_dot)
        - 0.5 * jnp.dot(precision, prior_variance_dot)
        + jnp.dot(noise_sensitivity, noise_variance_dot)
        - jnp.dot(precision * error, residual_dot)
    )
    return value, jnp.where(factors_succeeded, tangent, 0.0)


@public_jit()
def elbo(posterior: SparsePosterior) -> Float[Array, ""]:
    """Collapsed Titsias bound with heteroskedastic noise (Li et al. 2023, eq. S18, stable form C.3):

        𝓛 = log N(y; m(X), Q + D) − ½ Tr((K − Q) D⁻¹)
          = −(n/2) log 2π − Σ_j log (L_S)_jj − ½ Σ_n log σ²_n − ½ ȳᵀD⁻¹ȳ + ½ cᵀc
            − ½ Σ_n k_nn/σ²_n + ½ Tr(R Rᵀ),

    with Tr(R Rᵀ) = ‖L_S‖²_F − M (since L_S L_Sᵀ = I + R Rᵀ). The last line of Li et al. 2023
    has −½cᵀc; the correct sign is +. 𝓛 ≤ log marginal likelihood, with equality at Z = X.

    Differentiable in the kernel, mean and noise parameters and the inducing inputs, by the
    closed-form derivatives in K_ZZ, K_ZX, diag K_XX, the noise variances and the residual
    (`_collapsed_bound_jvp`), with K_ZZ and K_ZX rebuilt from the posterior's kernel; the
    jitter of K_ZZ counts as a constant.
    """
    observations = posterior.observations
    inducing_mask = posterior.inducing_mask
    jitter = jnp.where(inducing_mask, posterior.inducing_factor.jitter, 0.0)
    inducing_gram = padded_gram(posterior.kernel, posterior.inducing_inputs, inducing_mask) + jnp.diag(jitter)
    cross = inducing_cross(
        posterior.kernel, posterior.inducing_inputs, inducing_mask, observations.inputs, observations.mask
    )
    return _collapsed_bound(
        inducing_gram,
        cross,
        posterior.kernel.diagonal(observations.inputs),
        observations.noise_variance,
        centred_targets(posterior.mean, observations),
        posterior,
        observations.mask,
        (posterior.result == RESULTS.successful) | (posterior.result == RESULTS.jitter_above_level),
    )
