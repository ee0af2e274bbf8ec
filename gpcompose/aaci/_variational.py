import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._errors import RESULTS
from .._linalg import CholeskyFactor, cholesky, cholesky_solve, log_determinant, solve_triangular
from ..kernels import AbstractKernel
from ..means import AbstractMean


class Projection(eqx.Module):
    """The map from whitened inducing values v ~ N(0, I) to the latent function at inputs X.

    With L = chol(K_ZZ), u = μ₀(Z) + L v and f | u the GP conditional (Titsias 2009),

        f(X) = μ₀(X) + A v + ε,   A = K_XZ L⁻ᵀ,   Var ε_i = k(x_i, x_i) − ‖A_i‖²  (the Titsias term),

    which corrects the marginal of Galy-Fajou, Wenzel & Opper (2020, App. A.4.4): that omits the
    Titsias term K̃_ii and assumes a zero prior mean. With Z = X the residual vanishes (up to
    jitter) and A = L: the full GP.
    """

    matrix: Float[Array, "N M"]
    residual_variance: Float[Array, " N"]
    prior_mean: Float[Array, " N"]
    result: RESULTS


def inducing_factor(kernel: AbstractKernel, Z: Float[Array, "M D"]) -> CholeskyFactor:
    """chol(K_ZZ) with the jitter policy of `_linalg.cholesky`."""
    return cholesky(kernel.gram(Z))


def project(
    kernel: AbstractKernel, mean: AbstractMean, Z: Float[Array, "M D"], factor: CholeskyFactor, X: Float[Array, "N D"]
) -> Projection:
    """The `Projection` of inputs `X` through inducing inputs `Z` with `factor` = chol(K_ZZ)."""
    matrix = solve_triangular(factor.lower, kernel.cross(Z, X)).T
    residual = jnp.maximum(kernel.diagonal(X) - jnp.sum(matrix**2, axis=1), 0.0)
    return Projection(matrix, residual, mean(X), factor.result)


class NaturalGaussian(eqx.Module):
    """q(v) = N(m, S) over whitened inducing values, stored by its natural parameters

        η₁ = S⁻¹ m,   η₂ = −½ S⁻¹,

    which natural-gradient SVI interpolates (Hoffman et al. 2013; the printed Alg. 3 of
    Galy-Fajou, Wenzel & Opper 2020 interpolates (m, S) instead) and CAVI replaces. The
    prior is N(0, I): η₁ = 0, η₂ = −½ I.
    """

    linear: Float[Array, " M"]
    quadratic: Float[Array, "M M"]

    @classmethod
    def standard(cls, size: int, dtype) -> "NaturalGaussian":
        """The prior N(0, I)."""
        return cls(jnp.zeros((size,), dtype), -0.5 * jnp.eye(size, dtype=dtype))

    def precision_factor(self) -> CholeskyFactor:
        """chol(S⁻¹) = chol(−2 η₂)."""
        return cholesky(-2 * self.quadratic)

    def moments(self) -> tuple[Float[Array, " M"], CholeskyFactor]:
        """(m, chol(S⁻¹))."""
        factor = self.precision_factor()
        return cholesky_solve(factor.lower, self.linear), factor

    def marginals(self, projection: Projection) -> tuple[Float[Array, " N"], Float[Array, " N"], RESULTS]:
        """Mean and variance of q(f_i) = ∫ p(f_i | v) q(v) dv:
        μ₀(x_i) + A_i m and k_ii − ‖A_i‖² + A_i S A_iᵀ."""
        mean, factor = self.moments()
        whitened = solve_triangular(factor.lower, projection.matrix.T)
        variance = projection.residual_variance + jnp.sum(whitened**2, axis=0)
        return projection.prior_mean + projection.matrix @ mean, variance, factor.result

    def kl_to_prior(self) -> Float[Array, ""]:
        """KL[q(v) ‖ N(0, I)] = ½ (tr S + mᵀm − M + log det S⁻¹), equal to KL[q(u) ‖ p(u)] (and
        to KL[q(f) ‖ p(f)] of Galy-Fajou et al. 2020, App. A.4, when Z = X)."""
        mean, factor = self.moments()
        inverse_factor = solve_triangular(factor.lower, jnp.eye(mean.shape[0], dtype=mean.dtype))
        trace = jnp.sum(inverse_factor**2)
        return 0.5 * (trace + jnp.sum(mean**2) - mean.shape[0] + log_determinant(factor.lower))

    def sample(self, key: PRNGKeyArray) -> Float[Array, " M"]:
        """One draw v = m + L_P⁻ᵀ z with L_P = chol(S⁻¹), z ~ N(0, I)."""
        mean, factor = self.moments()
        noise = jax.random.normal(key, mean.shape, mean.dtype)
        return mean + solve_triangular(factor.lower, noise, transpose=True)
