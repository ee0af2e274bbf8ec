import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._base import AbstractPrior


class LogScale(AbstractPrior):
    """Prior on a positive parameter whose logarithm follows `base`.

    log p(x) = log p_base(log x) − log x (change of variables). `LogScale(Normal(m, s))`
    equals `LogNormal(m, s)`. The density is proper exactly when `base` is; `sample` draws
    exp(z) with z ~ `base` and raises, as `base.sample` does, for a base without a sampler.
    """

    base: AbstractPrior

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        log_value = jnp.log(jnp.asarray(value))
        return self.base.log_prob(log_value) - log_value

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        return jnp.exp(self.base.sample(key, shape))
