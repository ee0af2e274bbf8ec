"""The Cigar target of the VBMC toy suite (Acerbi 2018, §4.1; BVBMC thesis §7.2): an unnormalised,
strongly elongated Gaussian in D dimensions,

    log f(x) = −½ xᵀ Σ⁻¹ x,   Σ = Q Λ Qᵀ,   Λ = diag(10, 0.1, …, 0.1),

with Q Haar-distributed on SO(D): the QR factors of a standard normal matrix with the signs of diag(R) moved
into Q (Mezzadri 2007, §5), then the first column negated where det Q = −1. Σ⁻¹ is formed by dense inversion
of Σ (not as Q Λ⁻¹ Qᵀ, equal up to rounding), as `benchmarks/bvbmc_toy.py` did before this module, so that
its runs reproduce bit for bit. The mean is 0 and

    log Z = (D/2) log 2π + ½ log det Σ = (D/2) log 2π + ½ Σ_d log Λ_dd.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_point

_LONG_VARIANCE = 10.0
_SHORT_VARIANCE = 0.1


class Cigar(eqx.Module):
    """One Cigar instance, drawn from `key` in `dimension` dimensions (module docstring).

    Fields: `rotation` Q ∈ SO(D), `variances` diag Λ, exact `mean` (zeros), `covariance` Σ, `precision`
    Σ⁻¹ and `log_normalizer`. `log_density(x)` is −½ xᵀ Σ⁻¹ x for one point of shape (D,).
    """

    rotation: Float[Array, "D D"]
    variances: Float[Array, " D"]
    mean: Float[Array, " D"]
    covariance: Float[Array, "D D"]
    precision: Float[Array, "D D"]
    log_normalizer: Float[Array, ""]

    def __init__(self, key: PRNGKeyArray, dimension: int):
        q, r = jnp.linalg.qr(jax.random.normal(key, (dimension, dimension)))
        rotation = q * jnp.sign(jnp.diag(r))[None, :]
        self.rotation = rotation.at[:, 0].multiply(jnp.sign(jnp.linalg.det(rotation)))
        self.variances = jnp.full((dimension,), _SHORT_VARIANCE).at[0].set(_LONG_VARIANCE)
        self.mean = jnp.zeros(dimension)
        self.covariance = (self.rotation * self.variances[None, :]) @ self.rotation.T
        self.precision = jnp.linalg.inv(self.covariance)
        self.log_normalizer = 0.5 * dimension * math.log(2.0 * math.pi) + 0.5 * jnp.sum(jnp.log(self.variances))

    @property
    def dimension(self) -> int:
        """The number of parameters D of the target."""
        return self.mean.shape[0]

    def log_density(self, x: Float[ArrayLike, " D"]) -> Float[Array, ""]:
        """−½ xᵀ Σ⁻¹ x."""
        x = check_point(x, "x", self.dimension)
        return -0.5 * x @ self.precision @ x
