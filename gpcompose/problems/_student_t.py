"""The Student-t target of the VBMC toy suite (Acerbi 2018, §4.1; BVBMC thesis §7.2): a product of
unnormalised Student-t kernels with random degrees of freedom,

    log f(x) = Σ_d −½(ν_d + 1) log(1 + x_d²/ν_d),   ν_d ~ U(2.5, 2 + D/2),

so the mean is 0, the covariance is diag(ν_d/(ν_d − 2)) (finite since ν_d > 2) and, by the normaliser of
the Student-t density,

    log Z = Σ_d [log Γ(ν_d/2) + ½ log(ν_d π) − log Γ((ν_d + 1)/2)].
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_point

_SMALLEST_DEGREES_OF_FREEDOM = 2.5


class StudentT(eqx.Module):
    """One Student-t instance, drawn from `key` in `dimension` dimensions (module docstring).

    Fields: `degrees_of_freedom` ν (D,), exact `mean` (zeros), `covariance` diag(ν/(ν − 2)) and
    `log_normalizer`. `log_density(x)` is the unnormalised log density of one point of shape (D,).
    """

    degrees_of_freedom: Float[Array, " D"]
    mean: Float[Array, " D"]
    covariance: Float[Array, "D D"]
    log_normalizer: Float[Array, ""]

    def __init__(self, key: PRNGKeyArray, dimension: int):
        dof = jax.random.uniform(key, (dimension,), minval=_SMALLEST_DEGREES_OF_FREEDOM, maxval=2.0 + 0.5 * dimension)
        self.degrees_of_freedom = dof
        self.mean = jnp.zeros(dimension)
        self.covariance = jnp.diag(dof / (dof - 2.0))
        self.log_normalizer = jnp.sum(gammaln(0.5 * dof) + 0.5 * jnp.log(dof * math.pi) - gammaln(0.5 * (dof + 1.0)))

    @property
    def dimension(self) -> int:
        """The number of parameters D of the target."""
        return self.mean.shape[0]

    def log_density(self, x: Float[ArrayLike, " D"]) -> Float[Array, ""]:
        """Σ_d −½(ν_d + 1) log1p(x_d²/ν_d)."""
        x = check_point(x, "x", self.dimension)
        dof = self.degrees_of_freedom
        return jnp.sum(-0.5 * (dof + 1.0) * jnp.log1p(x**2 / dof))
