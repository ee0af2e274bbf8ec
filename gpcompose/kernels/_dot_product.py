import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, positive_converter
from ._base import AbstractKernel, as_active_dims, check_per_dimension, select_dims


class Linear(AbstractKernel):
    """k(x, x′) = Σ_d σ²_d x_d x′_d (Bayesian linear regression; `variance` is scalar or ARD)."""

    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        x1 = select_dims(self.active_dims, x1)
        x2 = select_dims(self.active_dims, x2)
        variance = check_per_dimension(self, "variance", self.variance.value, x1.shape[-1])
        return jnp.sum(variance * x1 * x2)


class Polynomial(AbstractKernel):
    """k(x, x′) = (σ² xᵀx′ + c)^p with integer degree p and offset c > 0."""

    degree: int = eqx.field(static=True)
    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    offset: AbstractParameter = eqx.field(converter=positive_converter("offset"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    def __check_init__(self):
        if not isinstance(self.degree, int) or self.degree < 1:
            raise ValueError(f"`degree` must be a positive integer, got {self.degree!r}.")

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        x1 = select_dims(self.active_dims, x1)
        x2 = select_dims(self.active_dims, x2)
        return (self.variance.value * jnp.dot(x1, x2) + self.offset.value) ** self.degree
