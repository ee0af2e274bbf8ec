import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ..parameters import AbstractParameter, positive_converter
from ._omega_samplers import sample_inverse_gaussian
from ._residual import AbstractResidualLikelihood
from ._super_gaussian import root_of_square, safe_root


class Laplace(AbstractResidualLikelihood):
    """Laplace regression with scale b: p(y | f) = e^{−|y − f|/b}/(2b).

    Galy-Fajou et al. (2020), Table 1: C = 1/(2b), g = 0, h = f − y, φ(r) = e^{−√r/b}; p(ω) is Lévy
    (InvGamma(1/2, scale 1/(4b²))), π(ω | c) = IG(mean 1/(2bc), shape 1/(2b²)) and ω̄ = 1/(2bc),
    which diverges as c → 0 (c is clamped to the smallest normal number).

    **Arguments:** `scale` b (default 1, as in the authors' code).
    """

    scale: AbstractParameter = eqx.field(converter=positive_converter("scale"), default=1.0)

    def log_normalizer(self) -> Float[Array, ""]:
        return -jnp.log(2 * self.scale.value)

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        r = jnp.asarray(r)
        return -root_of_square(r) / self.scale.value.astype(r.dtype)

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        return 1 / (2 * self.scale.value * safe_root(jnp.asarray(c_squared)))

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        c_squared = jnp.asarray(c_squared)
        b = self.scale.value
        return sample_inverse_gaussian(key, self.mean_omega(c_squared), jnp.full_like(c_squared, 1 / (2 * b**2)))

    def observation_variance(self) -> Float[Array, ""]:
        return 2 * self.scale.value**2
