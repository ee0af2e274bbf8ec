import math

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..likelihoods import AbstractSuperGaussianLikelihood
from ._variational import NaturalGaussian, Projection

# Half-width, in standard deviations, of the range integrated by `split_gauss_legendre_points`.
_HALF_WIDTH = 12.0


def expected_squared_h(
    likelihood: AbstractSuperGaussianLikelihood,
    y: Float[Array, " N"],
    mean: Float[Array, " N"],
    variance: Float[Array, " N"],
) -> Float[Array, " N"]:
    """c² = E_q[h²] = (a₀ + a₁ m)² + a₁² s, the local CAVI update (document Alg. 1) in the affine
    form that has no cancellation (notes/aaci.md §2.1)."""
    a0, a1 = likelihood.affine_coefficients(y)
    return (a0 + a1 * mean) ** 2 + a1**2 * variance


def natural_targets(
    likelihood: AbstractSuperGaussianLikelihood,
    y: Float[Array, " N"],
    projection: Projection,
    omega: Float[Array, " N"],
    scale: Float[Array, ""],
) -> NaturalGaussian:
    """The optimal q(v) given ω (document Theorem 2 / Alg. 1 and 3, in whitened coordinates).

    Given ω the likelihood is exp(b f − ½ λ f²) up to a constant, with the site precision
    λ = 2ω a₁² (= 2ωγ) and b = g + ωβ = g − 2ω a₀ a₁. With f = μ₀ + A v and v ~ N(0, I):

        η̂₁ = s Aᵀ(b − λ μ₀),   η̂₂ = −½ I − ½ s Aᵀ diag(λ) A,

    where s = N/|B| rescales a minibatch (notes/aaci.md §2.7, fixes 1 and 4). With Z = X these
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


def split_gauss_legendre_points(
    likelihood: AbstractSuperGaussianLikelihood,
    y: Float[Array, " N"],
    mean: Float[Array, " N"],
    variance: Float[Array, " N"],
    degree: int,
) -> tuple[Float[Array, "N P"], Float[Array, "N P"]]:
    """Nodes f_ip and weights w_ip with E_{f ~ N(mean_i, variance_i)}[F(f)] ≈ Σ_p w_ip F(f_ip) for
    the functions of a super-Gaussian likelihood, which may have a kink where h = 0 (Laplace,
    Matérn, SVM: φ involves √r = |h|) and are smooth elsewhere.

    The range mean ± 12 sd is split at the kink f = −a₀/a₁ (clipped to the range) and each panel
    gets a `degree`-point Gauss–Legendre rule times the normal density, so both panels converge
    spectrally; Gauss–Hermite across the kink converges only algebraically (1.7 % error in the
    Laplace gap of notes/aaci.md §6 item 9 with 64 nodes). P = 2 · `degree`.
    """
    nodes, weights = np.polynomial.legendre.leggauss(degree)
    nodes, weights = jnp.asarray(nodes, mean.dtype), jnp.asarray(weights, mean.dtype)
    a0, a1 = likelihood.affine_coefficients(y)
    sd = jnp.sqrt(variance)
    lower, upper = mean - _HALF_WIDTH * sd, mean + _HALF_WIDTH * sd
    kink = jnp.clip(-a0 / a1, lower, upper)

    def panel(start, stop):
        half = (stop - start)[:, None] / 2
        points = (start + stop)[:, None] / 2 + half * nodes[None, :]
        density = jnp.exp(-0.5 * ((points - mean[:, None]) / sd[:, None]) ** 2) / (math.sqrt(2 * math.pi) * sd[:, None])
        return points, half * weights[None, :] * density

    left_points, left_weights = panel(lower, kink)
    right_points, right_weights = panel(kink, upper)
    return jnp.concatenate([left_points, right_points], 1), jnp.concatenate([left_weights, right_weights], 1)
