import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, positive_converter
from ._base import AbstractKernel, as_active_dims, select_dims


class Constant(AbstractKernel):
    """k(x, x′) = σ² for all inputs."""

    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        return self.variance.value


class White(AbstractKernel):
    """k(x, x′) = σ² · 1[x = x′] (white noise; equal inputs are treated as the same point)."""

    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        same = jnp.all(select_dims(self.active_dims, x1) == select_dims(self.active_dims, x2))
        return jnp.where(same, self.variance.value, 0.0)
