import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._base import AbstractPrior, sample_dtype


def _normal_log_prob(value, loc, scale):
    z = (value - loc) / scale
    return -0.5 * z**2 - jnp.log(scale) - 0.5 * jnp.log(2 * jnp.pi)


def _normal_sample(key, shape, loc, scale):
    """loc + scale · ε, ε ~ N(0, 1)."""
    loc, scale = jnp.broadcast_to(loc, shape), jnp.broadcast_to(scale, shape)
    return loc + scale * jax.random.normal(key, shape, sample_dtype(scale))


class Normal(AbstractPrior):
    """Normal prior N(loc, scale²) on a real parameter; `sample` draws loc + scale · ε, ε ~ N(0, 1)."""

    loc: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)
    scale: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        return _normal_log_prob(jnp.asarray(value), self.loc, self.scale)

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        return _normal_sample(key, shape, self.loc, self.scale)


class LogNormal(AbstractPrior):
    """LogNormal prior on a positive parameter: log x ~ N(loc, scale²).

    log p(x) = log N(log x; loc, scale²) − log x; `sample` draws exp(loc + scale · ε).
    """

    loc: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)
    scale: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        log_value = jnp.log(jnp.asarray(value))
        return _normal_log_prob(log_value, self.loc, self.scale) - log_value

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        return jnp.exp(_normal_sample(key, shape, self.loc, self.scale))
