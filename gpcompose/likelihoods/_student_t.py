import equinox as eqx
import jax.numpy as jnp
from jax.scipy.special import gammaln
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ..parameters import AbstractParameter, positive_converter
from ._omega_samplers import sample_gamma
from ._residual import AbstractResidualLikelihood


class StudentT(AbstractResidualLikelihood):
    """Student-t regression with ν degrees of freedom and scale σ:

        p(y | f) = Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ) · (1 + (y − f)²/(νσ²))^{−(ν+1)/2},

    Galy-Fajou et al. (2020), Table 1 (App. A.6 prints Γ(ν) for Γ(ν/2), a typo): g = 0, h = (f − y)/σ,
    φ(r) = (1 + r/ν)^{−(ν+1)/2}, so p(ω) = Gamma((ν+1)/2, rate ν), π(ω | c) = Gamma((ν+1)/2, ν + c²)
    and ω̄ = (ν + 1)/(2(ν + c²)).

    **Arguments:** `degrees_of_freedom` ν (default 3, as in the authors' code) and `scale` σ.
    """

    degrees_of_freedom: AbstractParameter = eqx.field(converter=positive_converter("degrees_of_freedom"), default=3.0)
    scale: AbstractParameter = eqx.field(converter=positive_converter("scale"), default=1.0)

    def log_normalizer(self) -> Float[Array, ""]:
        nu = self.degrees_of_freedom.value
        return gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * jnp.log(nu * jnp.pi) - jnp.log(self.scale.value)

    def residual_scale(self) -> Float[Array, ""]:
        """σ: h = (f − y)/σ."""
        return self.scale.value

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """−(ν+1)/2 · log1p(r/ν)."""
        r = jnp.asarray(r)
        nu = self.degrees_of_freedom.value.astype(r.dtype)
        return -(nu + 1) / 2 * jnp.log1p(r / nu)

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        nu = self.degrees_of_freedom.value
        return (nu + 1) / (2 * (nu + jnp.asarray(c_squared)))

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        c_squared = jnp.asarray(c_squared)
        nu = self.degrees_of_freedom.value
        return sample_gamma(key, jnp.full_like(c_squared, (nu + 1) / 2), nu + c_squared)

    def observation_variance(self) -> Float[Array, ""]:
        """σ² ν/(ν − 2), infinite for ν ≤ 2."""
        nu = self.degrees_of_freedom.value
        return jnp.where(nu > 2, self.scale.value**2 * nu / jnp.where(nu > 2, nu - 2, 1.0), jnp.inf)
