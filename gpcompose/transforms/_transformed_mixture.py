import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ..mixtures import AbstractGaussianMixture
from ._bounded import BoundedTransform


class TransformedMixture(eqx.Module):
    """Push-forward of a Gaussian mixture q on the unbounded space through
    `transform.from_unbounded`: the variational posterior in the original, bounded
    coordinates (Li, Clarté & Acerbi 2023, App. A.5).

    Change of variables: p(x) = q(u(x)) / |dx/du|(u(x)), so
        log p(x) = log q(u(x)) − log|dx/du|(u(x))   inside the box, −∞ outside it.
    """

    mixture: AbstractGaussianMixture
    transform: BoundedTransform

    def __check_init__(self):
        if self.mixture.dimension != self.transform.dimension:
            raise ValueError(
                f"`mixture` has dimension {self.mixture.dimension} but `transform` has {self.transform.dimension}."
            )

    @property
    def dimension(self) -> int:
        """The dimension D."""
        return self.mixture.dimension

    def sample(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "S D"]:
        """x = x(u) with u drawn from the mixture."""
        return self.transform.from_unbounded(self.mixture.sample(key, num_samples))

    def log_prob(self, x: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch"]:
        """log p(x) for one point or a batch (..., D); −∞ on and outside the bounds."""
        x = jnp.asarray(x)
        if x.shape[-1:] != (self.dimension,):
            raise ValueError(f"`x` must have a last axis of size {self.dimension}, got shape {x.shape}.")
        transform = self.transform
        lower = jnp.broadcast_to(transform.lower.astype(x.dtype), x.shape)
        upper = jnp.broadcast_to(transform.upper.astype(x.dtype), x.shape)
        inside = jnp.all((x > lower) & (x < upper), axis=-1)
        interior = transform.from_unbounded(jnp.zeros(x.shape, x.dtype))
        u = transform.to_unbounded(jnp.where(inside[..., None], x, interior))
        log_density = self.mixture.log_prob(u) - transform.log_abs_det_jacobian(u)
        return jnp.where(inside, log_density, -jnp.inf)
