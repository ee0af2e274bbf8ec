import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ._base import AbstractPrior


class LogScale(AbstractPrior):
    """Prior on a positive parameter whose logarithm follows `base`.

    log p(x) = log p_base(log x) − log x (change of variables). `LogScale(Normal(m, s))`
    equals `LogNormal(m, s)`.
    """

    base: AbstractPrior

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        log_value = jnp.log(jnp.asarray(value))
        return self.base.log_prob(log_value) - log_value
