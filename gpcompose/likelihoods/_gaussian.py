import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ..parameters import AbstractParameter, positive_converter
from ._residual import AbstractResidualLikelihood


class Gaussian(AbstractResidualLikelihood):
    """p(y | f) = N(y; f, σ²).

    Also the degenerate super-Gaussian likelihood (not in the catalogue of Galy-Fajou, Wenzel &
    Opper 2020; useful as a test):
    C = (2πσ²)^{−1/2}, g = 0, h = f − y, φ(r) = e^{−r/(2σ²)}, so p(ω) = δ(ω − 1/(2σ²)),
    ω̄ = 1/(2σ²) and augmented inference is exact.

    **Arguments:** `variance` σ² (a number is wrapped in `Positive`; pass a parameter to
    choose its transform or prior).
    """

    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)

    def log_normalizer(self) -> Float[Array, ""]:
        return -0.5 * (math.log(2 * math.pi) + jnp.log(self.variance.value))

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        r = jnp.asarray(r)
        return -r / (2 * self.variance.value.astype(r.dtype))

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        """The point mass ω = 1/(2σ²)."""
        return jnp.full_like(jnp.asarray(c_squared), 1 / (2 * self.variance.value))

    def observation_variance(self) -> Float[Array, ""]:
        return self.variance.value

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
