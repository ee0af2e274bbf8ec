import jax.numpy as jnp
from jaxtyping import Array, Float

from ._super_gaussian import AbstractSuperGaussianLikelihood


class AbstractResidualLikelihood(AbstractSuperGaussianLikelihood):
    """A super-Gaussian regression likelihood of the scaled residual (f − y)/s alone:

        p(y | f) = C φ(((f − y)/s)²),   so g = 0 and h = a₀ + a₁ f with a₀ = −y/s, a₁ = 1/s

    (Galy-Fajou et al. 2020, Table 1: the Gaussian, Student-t, Laplace and Matérn-3/2 rows). A subclass
    gives C, φ and, where φ carries the scale itself, keeps the default s = 1 (`residual_scale`).
    """

    def residual_scale(self) -> float | Float[Array, ""]:
        """s, the scale that divides the residual inside h; 1 unless overridden."""
        return 1.0

    def linear_coefficient(self, y: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
        return jnp.zeros_like(y)

    def affine_coefficients(self, y: Float[Array, "*batch"]) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        inverse_scale = 1 / self.residual_scale()
        return -y * inverse_scale, jnp.ones_like(y) * inverse_scale
