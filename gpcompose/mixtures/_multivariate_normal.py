import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._linalg import cholesky
from .._validation import as_floating, check_key
from ._gaussian import factor_gaussian_log_prob


class MultivariateNormal(eqx.Module):
    """A full-covariance Gaussian N(μ, Σ), used as a quadrature measure."""

    location: Float[Array, " D"]
    covariance_matrix: Float[Array, "D D"]

    def __init__(self, mean: Float[ArrayLike, " D"], covariance: Float[ArrayLike, "D D"]):
        mean = as_floating(mean, "mean")
        covariance = as_floating(covariance, "covariance").astype(mean.dtype)
        if mean.ndim != 1 or covariance.shape != (mean.shape[0], mean.shape[0]):
            raise ValueError(
                f"`mean` must have shape (D,) and `covariance` (D, D), got {mean.shape} and {covariance.shape}."
            )
        self.location = mean
        self.covariance_matrix = covariance

    @property
    def dimension(self) -> int:
        """The dimension D."""
        return self.location.shape[0]

    def mean(self) -> Float[Array, " D"]:
        """The mean μ."""
        return self.location

    def covariance(self) -> Float[Array, "D D"]:
        """The covariance matrix Σ."""
        return self.covariance_matrix

    def log_prob(self, x: Float[Array, "*batch D"]) -> Float[Array, "*batch"]:
        """log N(x; μ, Σ) for one point or a batch."""
        x = jnp.asarray(x)
        if x.shape[-1:] != (self.dimension,):
            raise ValueError(f"`x` must have a last axis of size {self.dimension}, got shape {x.shape}.")
        lower = cholesky(self.covariance_matrix).lower
        flat = x.reshape(-1, self.dimension)
        values = jax.vmap(factor_gaussian_log_prob, in_axes=(0, None, None))(flat, self.location, lower)
        return values.reshape(x.shape[:-1])

    def sample(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "S D"]:
        """Reparameterised draws μ + L ε."""
        lower = cholesky(self.covariance_matrix).lower
        noise = jax.random.normal(check_key(key), (num_samples, self.dimension), self.location.dtype)
        return self.location[None, :] + noise @ lower.T
