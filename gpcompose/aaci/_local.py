import jax.numpy as jnp
from jaxtyping import Array, Float

from ..likelihoods import AbstractSuperGaussianLikelihood
from ._variational import NaturalGaussian, Projection


def expected_squared_h(
    likelihood: AbstractSuperGaussianLikelihood,
    y: Float[Array, " N"],
    mean: Float[Array, " N"],
    variance: Float[Array, " N"],
) -> Float[Array, " N"]:
    """c² = E_q[h²] = (a₀ + a₁ m)² + a₁² s, the local CAVI update (Galy-Fajou et al. 2020, Alg. 1) in the affine
    form h = a₀ + a₁ f (α = a₀², β = −2a₀a₁, γ = a₁²), which has no cancellation."""
    a0, a1 = likelihood.affine_coefficients(y)
    return (a0 + a1 * mean) ** 2 + a1**2 * variance


def natural_targets(
    likelihood: AbstractSuperGaussianLikelihood,
    y: Float[Array, " N"],
    projection: Projection,
    omega: Float[Array, " N"],
    scale: Float[Array, ""],
) -> NaturalGaussian:
    """The optimal q(v) given ω (Galy-Fajou et al. 2020, Theorem 2 and Algs. 1 and 3, in whitened coordinates).

    Given ω the likelihood is exp(b f − ½ λ f²) up to a constant, with the site precision
    λ = 2ω a₁² (= 2ωγ) and b = g + ωβ = g − 2ω a₀ a₁. With f = μ₀ + A v and v ~ N(0, I):

        η̂₁ = s Aᵀ(b − λ μ₀),   η̂₂ = −½ I − ½ s Aᵀ diag(λ) A,

    where s = N/|B| rescales a minibatch (Hoffman et al. 2013) and μ₀ may be non-zero, two
    corrections of Alg. 3 of Galy-Fajou, Wenzel & Opper (2020). With Z = X these
    are S = (K⁻¹ + diag(2ωγ))⁻¹, m = S(K⁻¹μ₀ + g + ωβ) of Alg. 1, written for v = L⁻¹(f − μ₀).
    """
    a0, a1 = likelihood.affine_coefficients(y)
    precision = 2 * omega * a1**2
    linear = likelihood.linear_coefficient(y) - 2 * omega * a0 * a1
    matrix = projection.matrix
    eta_linear = scale * matrix.T @ (linear - precision * projection.prior_mean)
    eye = jnp.eye(matrix.shape[1], dtype=matrix.dtype)
    eta_quadratic = -0.5 * eye - 0.5 * scale * (matrix.T * precision[None, :]) @ matrix
    return NaturalGaussian(eta_linear, 0.5 * (eta_quadratic + eta_quadratic.T))
