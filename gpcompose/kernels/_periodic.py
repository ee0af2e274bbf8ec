import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, positive_converter
from ._base import AbstractKernel, as_active_dims, check_per_dimension, select_dims


class Periodic(AbstractKernel):
    """k(x, x′) = σ² exp(−2 Σ_d sin²(π (x_d − x′_d)/p_d) / ℓ_d²) (MacKay 1998),
    with a period p_d and lengthscale ℓ_d per active dimension (or shared)."""

    lengthscale: AbstractParameter = eqx.field(converter=positive_converter("lengthscale"), default=1.0)
    period: AbstractParameter = eqx.field(converter=positive_converter("period"), default=1.0)
    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        difference = select_dims(self.active_dims, x1) - select_dims(self.active_dims, x2)
        period = check_per_dimension(self, "period", self.period.value, difference.shape[-1])
        lengthscale = check_per_dimension(self, "lengthscale", self.lengthscale.value, difference.shape[-1])
        sines = jnp.sin(jnp.pi * difference / period) / lengthscale
        return self.variance.value * jnp.exp(-2.0 * jnp.sum(sines**2))
