"""The Lumpy target of the VBMC toy suite (Acerbi 2018, §4.1; BVBMC thesis §7.2): a random normalised
mixture of 12 diagonal Gaussians in D dimensions,

    p(x) = Σ_{i=1}^{12} w_i N(x; μ_i, diag(σ²_i)),   w ~ Dir(1, …, 1),  μ_i ~ U[0, 1]^D,
    σ²_{i,d} ~ U(0.2, 0.6)  (variances, as in the thesis's code),

so log Z = 0, and the mean Σ_i w_i μ_i and covariance Σ_i w_i (diag σ²_i + μ_i μ_iᵀ) − μ̄ μ̄ᵀ are exact.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_point
from ..mixtures import GaussianMixture

_NUM_COMPONENTS = 12
_SMALLEST_VARIANCE = 0.2
_LARGEST_VARIANCE = 0.6


class Lumpy(eqx.Module):
    """One Lumpy instance, drawn from `key` in `dimension` dimensions (module docstring).

    Fields: `mixture` (the target as a `GaussianMixture`), exact `mean` (D,) and `covariance` (D, D), and
    `log_normalizer` = 0. `log_density(x)` is log p(x) for one point of shape (D,).
    """

    mixture: GaussianMixture
    mean: Float[Array, " D"]
    covariance: Float[Array, "D D"]
    log_normalizer: Float[Array, ""]

    def __init__(self, key: PRNGKeyArray, dimension: int):
        weight_key, mean_key, variance_key = jax.random.split(key, 3)
        weights = jax.random.dirichlet(weight_key, jnp.ones(_NUM_COMPONENTS))
        means = jax.random.uniform(mean_key, (_NUM_COMPONENTS, dimension))
        variances = jax.random.uniform(
            variance_key, (_NUM_COMPONENTS, dimension), minval=_SMALLEST_VARIANCE, maxval=_LARGEST_VARIANCE
        )
        self.mixture = GaussianMixture.from_moments(weights, means, variances)
        self.mean = self.mixture.mean()
        self.covariance = self.mixture.covariance()
        self.log_normalizer = jnp.zeros((), means.dtype)

    @property
    def dimension(self) -> int:
        """The number of parameters D of the target."""
        return self.mean.shape[0]

    def log_density(self, x: Float[ArrayLike, " D"]) -> Float[Array, ""]:
        """log p(x), normalised."""
        return self.mixture.log_prob(check_point(x, "x", self.dimension))
