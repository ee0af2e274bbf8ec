import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..parameters import AbstractParameter, as_positive
from ._base import AbstractLikelihood


class Gaussian(AbstractLikelihood):
    """p(y | f) = N(y; f, σ²).

    **Arguments:** `variance` σ² (a number is wrapped in `Positive`; pass a parameter to
    choose its transform or prior).
    """

    variance: AbstractParameter = eqx.field(converter=as_positive, default=1.0)

    def log_prob(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        variance = self.variance.value
        return -0.5 * (jnp.log(2 * jnp.pi * variance) + (jnp.asarray(y) - jnp.asarray(f)) ** 2 / variance)
