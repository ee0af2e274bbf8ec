import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..priors import AbstractPrior
from ._parameter import AbstractParameter, _as_float_array, _spec


class Real(AbstractParameter):
    """An unconstrained real hyperparameter (identity transform)."""

    unconstrained: Float[Array, "*shape"]
    prior: AbstractPrior | None

    def __init__(self, value: Float[ArrayLike, "*shape"], prior: AbstractPrior | None = None):
        self.unconstrained = self.inverse(value)
        self.prior = prior

    @property
    def value(self) -> Float[Array, "*shape"]:
        return self.unconstrained

    def inverse(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        """The unconstrained coordinate of `value`: `value` itself (identity transform)."""
        return _as_float_array(value)

    def log_jacobian(self) -> Float[Array, ""]:
        return jnp.zeros((), self.unconstrained.dtype)

    def trainable_spec(self) -> "Real":
        return _spec(self, "unconstrained")


class Fixed(AbstractParameter):
    """A hyperparameter held constant: excluded from fitting, SVGD and flattening."""

    fixed_value: Float[Array, "*shape"]
    prior: None = eqx.field(default=None, static=True)

    def __init__(self, value: Float[ArrayLike, "*shape"]):
        self.fixed_value = _as_float_array(value)

    @property
    def value(self) -> Float[Array, "*shape"]:
        return self.fixed_value

    def log_jacobian(self) -> Float[Array, ""]:
        return jnp.zeros((), self.fixed_value.dtype)

    def trainable_spec(self) -> "Fixed":
        return _spec(self, None)
