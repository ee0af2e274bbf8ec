import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ..parameters import AbstractParameter, positive_converter
from ._omega_samplers import sample_gig_three_halves
from ._residual import AbstractResidualLikelihood
from ._super_gaussian import root_of_square


class Matern32Likelihood(AbstractResidualLikelihood):
    """The Matérn-3/2 regression likelihood of Galy-Fajou et al. (2020, Table 1), with scale ρ:

        p(y | f) = √3/(4ρ) · (1 + √3|y − f|/ρ) e^{−√3|y − f|/ρ}

    (A.6 prints the inverted constant 4ρ/√3). g = 0, h = f − y, φ(r) = (1 + √(3r)/ρ) e^{−√(3r)/ρ};
    p(ω) = InvGamma(3/2, scale 3/(4ρ²)), π(ω | c) = GIG(p = −3/2, a = 2c², b = 3/(2ρ²)) and
    ω̄ = 3/(2ρ(ρ + √3 c)) → 3/(2ρ²) as c → 0.

    **Arguments:** `scale` ρ (default 1, as in the authors' code).
    """

    scale: AbstractParameter = eqx.field(converter=positive_converter("scale"), default=1.0)

    def log_normalizer(self) -> Float[Array, ""]:
        return math.log(math.sqrt(3) / 4) - jnp.log(self.scale.value)

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log1p(a√r) − a√r with a = √3/ρ."""
        r = jnp.asarray(r)
        scaled_root = math.sqrt(3) * root_of_square(r) / self.scale.value.astype(r.dtype)
        return jnp.log1p(scaled_root) - scaled_root

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        rho = self.scale.value
        return 3 / (2 * rho * (rho + math.sqrt(3) * jnp.sqrt(jnp.asarray(c_squared))))

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        """ω = 1/Y with Y ~ GIG(3/2, χ = 2c², ψ = 3/(2ρ²)), the reciprocal of GIG(−3/2, a = 2c², b = 3/(2ρ²))."""
        c_squared = jnp.asarray(c_squared)
        psi = jnp.full_like(c_squared, 3 / (2 * self.scale.value**2))
        return 1 / sample_gig_three_halves(key, 2 * c_squared, psi)

    def observation_variance(self) -> Float[Array, ""]:
        """4ρ²/3."""
        return 4 * self.scale.value**2 / 3
