import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._stationary import AbstractSpectralKernel, scale_frequencies


class SquaredExponential(AbstractSpectralKernel):
    """k(x, x′) = σ² exp(−½ r²), r² = Σ_d (x_d − x′_d)²/ℓ_d² (ARD).

    Spectral density: ω ~ N(0, diag(ℓ⁻²)).
    """

    def correlation(self, squared_distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        return jnp.exp(-0.5 * squared_distance)

    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        dtype = self.lengthscale.value.dtype
        standard = jax.random.normal(key, (num_features, dimension), dtype)
        return scale_frequencies(standard, self.checked_lengthscale(dimension))
