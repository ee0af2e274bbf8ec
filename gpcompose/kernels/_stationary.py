import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ..parameters import AbstractParameter, as_positive
from ._base import AbstractKernel, select_dims


def scale_frequencies(standard: Float[Array, "F d"], lengthscale: Float[Array, "*d"]) -> Float[Array, "F d"]:
    """ω = ω₀ / ℓ for a scalar or per-dimension lengthscale, broadcast by rank so that it
    also works under `jax_numpy_rank_promotion="raise"`."""
    return standard / jnp.atleast_1d(lengthscale)[None, :]


def safe_sqrt(squared: Float[Array, ""]) -> Float[Array, ""]:
    """√r² with a zero (not NaN) gradient at r² = 0."""
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)


class AbstractStationaryKernel(AbstractKernel):
    """k(x, x′) = σ² ρ(r²) with the ARD-scaled squared distance r² = Σ_d (x_d − x′_d)²/ℓ_d².

    **Arguments:** `lengthscale` ℓ (scalar or one per active dimension), `variance` σ²
    and `active_dims` (indices of the input columns the kernel sees; all by default).
    Numbers are wrapped in `Positive`; pass a parameter to choose its transform or prior.
    """

    lengthscale: AbstractParameter = eqx.field(converter=as_positive, default=1.0)
    variance: AbstractParameter = eqx.field(converter=as_positive, default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(default=None, static=True)

    @abc.abstractmethod
    def correlation(self, squared_distance: Float[Array, ""]) -> Float[Array, ""]:
        """ρ(r²), with ρ(0) = 1."""

    def scaled_difference(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, " d"]:
        """(x − x′)/ℓ on the active dimensions."""
        return (select_dims(self.active_dims, x1) - select_dims(self.active_dims, x2)) / self.lengthscale.value

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        squared_distance = jnp.sum(self.scaled_difference(x1, x2) ** 2)
        return self.variance.value * self.correlation(squared_distance)


class AbstractSpectralKernel(AbstractStationaryKernel):
    """A stationary kernel that can sample its normalised spectral density.

    Bochner: k(τ) = σ² E_ω[cos(ωᵀτ)] with ω drawn from the spectral density; random
    Fourier features (`random_features`) use these frequencies.
    """

    @abc.abstractmethod
    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        """`num_features` frequencies ω on the `dimension` active input coordinates."""
