import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

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

    def expected_log_prob(
        self, y: Float[ArrayLike, "*batch"], mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> Float[Array, "*batch"]:
        """E_{N(f; m, v)}[log N(y; f, σ²)] = log N(y; m, σ²) − v/(2σ²)."""
        return self.log_prob(y, mean) - 0.5 * jnp.asarray(variance) / self.variance.value

    def log_predictive_density(
        self, y: Float[ArrayLike, "*batch"], mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> Float[Array, "*batch"]:
        """log N(y; m, v + σ²)."""
        total = jnp.asarray(variance) + self.variance.value
        return -0.5 * (jnp.log(2 * jnp.pi * total) + (jnp.asarray(y) - jnp.asarray(mean)) ** 2 / total)

    def predictive_moments(
        self, mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        """(m, v + σ²)."""
        return jnp.asarray(mean), jnp.asarray(variance) + self.variance.value

    def sample(self, key: PRNGKeyArray, f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        f = jnp.asarray(f)
        return f + jnp.sqrt(self.variance.value) * jax.random.normal(key, f.shape, f.dtype)
