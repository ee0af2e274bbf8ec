import math

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._omega_samplers import sample_polya_gamma
from ._super_gaussian import AbstractSuperGaussianLikelihood, classification_targets, root_of_square

# Below this c the closed form tanh(c/2)/(4c) loses digits; a Taylor series takes over.
_SERIES_THRESHOLD = 1e-3


class Logistic(AbstractSuperGaussianLikelihood):
    """Logistic (Bernoulli-logit) classification, y ∈ {−1, 1} (labels {0, 1} are converted):

        p(y | f) = σ(y f) = e^{y f/2} / (2 cosh(f/2)),

    the form of Galy-Fajou et al. (2020), App. A.6: C = 1/2, g(y) = y/2, h = f, φ(r) = sech(√r/2), so that
    p(ω) is the law of PG(1, 0)/2 and π(ω | c) that of PG(1, c)/2 (Pólya–Gamma), and
    ω̄ = tanh(c/2)/(4c) → 1/8 as c → 0.
    """

    def targets(self, y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        return classification_targets(y)

    def log_normalizer(self) -> Float[Array, ""]:
        return jnp.asarray(-math.log(2.0))

    def linear_coefficient(self, y: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
        return y / 2

    def affine_coefficients(self, y: Float[Array, "*batch"]) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        return jnp.zeros_like(y), jnp.ones_like(y)

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log sech(√r/2) = log 2 − √r/2 − log1p(e^{−√r})."""
        root = root_of_square(jnp.asarray(r))
        return math.log(2.0) - root / 2 - jnp.log1p(jnp.exp(-root))

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """tanh(c/2)/(4c), by its series 1/8 − c²/96 + c⁴/960 for small c."""
        c_squared = jnp.asarray(c_squared)
        small = c_squared < _SERIES_THRESHOLD**2
        c = jnp.sqrt(jnp.where(small, 1.0, c_squared))
        closed_form = jnp.tanh(c / 2) / (4 * c)
        series = 1 / 8 - c_squared / 96 + c_squared**2 / 960
        return jnp.where(small, series, closed_form)

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        """ω = PG(1, c)/2 by Devroye's exact sampler."""
        return sample_polya_gamma(key, jnp.sqrt(jnp.asarray(c_squared))) / 2
