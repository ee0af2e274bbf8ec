import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ..parameters import AbstractParameter, positive_converter
from ._base import AbstractKernel, as_active_dims, check_per_dimension, select_dims
from ._matern import matern_correlation, student_t_frequencies
from ._stationary import scale_frequencies


class ProductMatern(AbstractKernel):
    """Product of one-dimensional Matérn-ν kernels (the BVBMC kernel):

        k(x, x′) = σ² Π_d ρ_ν(|x_d − x′_d| / ℓ_d),

    which factorises over dimensions so that its kernel mean embeddings are products of
    1-D integrals. Its spectral density is a product of 1-D Student-t densities (2ν dof).
    """

    smoothness: float = eqx.field(static=True)
    lengthscale: AbstractParameter = eqx.field(converter=positive_converter("lengthscale"), default=1.0)
    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    def __check_init__(self):
        if self.smoothness not in (0.5, 1.5, 2.5):
            raise ValueError(f"`smoothness` must be 0.5, 1.5 or 2.5, got {self.smoothness}.")

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        difference = select_dims(self.active_dims, x1) - select_dims(self.active_dims, x2)
        lengthscale = check_per_dimension(self, "lengthscale", self.lengthscale.value, difference.shape[-1])
        distances = jnp.abs(difference) / lengthscale
        return self.variance.value * jnp.prod(matern_correlation(self.smoothness, distances))

    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        """`num_features` frequencies ω with independent coordinates ω_d = t_d/ℓ_d, t_d drawn from
        the 1-D Student-t spectral density with 2ν degrees of freedom of each factor."""
        dtype = self.lengthscale.value.dtype
        standard = student_t_frequencies(key, self.smoothness, (num_features, dimension, 1), dtype)
        lengthscale = check_per_dimension(self, "lengthscale", self.lengthscale.value, dimension)
        return scale_frequencies(standard[..., 0], lengthscale)
