import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, as_real
from ._base import AbstractMean


class Zero(AbstractMean):
    """m(x) = 0."""

    def evaluate(self, x: Float[Array, " D"]) -> Float[Array, ""]:
        return jnp.zeros((), x.dtype)


class Constant(AbstractMean):
    """m(x) = c."""

    constant: AbstractParameter = eqx.field(converter=as_real, default=0.0)

    def evaluate(self, x: Float[Array, " D"]) -> Float[Array, ""]:
        return self.constant.value
