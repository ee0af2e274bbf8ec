import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._base import AbstractPrior, sample_dtype


class Gamma(AbstractPrior):
    """Gamma prior with `shape` k and `scale` θ on a positive parameter.

    log p(x) = (k − 1) log x − x/θ − log Γ(k) − k log θ (mean kθ, variance kθ²). SteinGP
    (Pinder, Nemeth & Leslie 2020, App. 12) uses Gamma(shape 1, scale 2) on lengthscales and
    variances (*scale*, not rate: mean 2). `sample` draws θ · G with G ~ Gamma(k, 1) (`jax.random.gamma`).
    """

    shape: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)
    scale: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        for name in ("shape", "scale"):
            value = getattr(self, name)
            if not isinstance(value, jax.core.Tracer) and not bool(jnp.all(value > 0)):
                raise ValueError(f"Gamma `{name}` must be > 0, got {value}.")

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        value = jnp.asarray(value)
        return (
            (self.shape - 1) * jnp.log(value)
            - value / self.scale
            - gammaln(self.shape)
            - self.shape * jnp.log(self.scale)
        )

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        concentration, scale = (jnp.broadcast_to(parameter, shape) for parameter in (self.shape, self.scale))
        return scale * jax.random.gamma(key, concentration, shape, sample_dtype(scale))
