import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, positive_converter
from ._stationary import AbstractStationaryKernel


class RationalQuadratic(AbstractStationaryKernel):
    """k(x, x′) = σ² (1 + r²/(2α))^{−α}: a scale mixture of squared exponentials
    (Rasmussen & Williams 2006, eq. 4.19); α → ∞ recovers the squared exponential."""

    mixture: AbstractParameter = eqx.field(converter=positive_converter("mixture"), default=1.0)

    def correlation(self, squared_distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        alpha = self.mixture.value
        return jnp.exp(-alpha * jnp.log1p(squared_distance / (2.0 * alpha)))
