import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PyTree


class AbstractParticleKernel(eqx.Module):
    """A positive-definite kernel κ(x, y) between two flattened particles, used by SVGD.

    A kernel has two parts. `bandwidth(particles)` computes whatever the kernel adapts
    to the current particle cloud (any pytree of arrays, e.g. a median-heuristic
    lengthscale) once per step. `__call__(x, y, bandwidth)` evaluates κ on two single
    particles of shape `(P,)`. SVGD differentiates `__call__` by autodiff, so a user
    kernel only needs these two methods. It may override `mixed_hessian_trace` with a
    closed form, because the generic one costs O(P²) per pair of particles.

    `bandwidth` should apply `jax.lax.stop_gradient` to anything it computes from the
    particles: the SVGD direction treats the bandwidth as a constant (Liu & Wang 2016).
    """

    @abc.abstractmethod
    def bandwidth(self, particles: Float[Array, "J P"]) -> PyTree[Array]:
        """The kernel's adaptive state for the current particles `(J, P)`."""

    @abc.abstractmethod
    def __call__(self, x: Float[Array, " P"], y: Float[Array, " P"], bandwidth: PyTree[Array]) -> Float[Array, ""]:
        """κ(x, y) for two single flattened particles."""

    def mixed_hessian_trace(
        self, x: Float[Array, " P"], y: Float[Array, " P"], bandwidth: PyTree[Array]
    ) -> Float[Array, ""]:
        """tr(∇_x ∇_y κ(x, y)) = Σ_p ∂²κ/∂x_p∂y_p, the last term of the Stein kernel.

        This generic version forms the P×P mixed Hessian by forward-over-reverse autodiff.
        """
        mixed_hessian = jax.jacfwd(jax.grad(self, argnums=0), argnums=1)(x, y, bandwidth)
        return jnp.trace(mixed_hessian)


def median_squared_lengthscale(particles: Float[Array, "J P"]) -> Float[Array, ""]:
    """ℓ² = median(D²)/log(J + 1), the median heuristic of Liu & Wang (2016).

    D² is the full J×J matrix of squared distances ‖λ_i − λ_j‖², with its zero
    diagonal and both triangles. This is the convention of Liu & Wang's code and of the
    SteinGP code (notes/steingp.md §2.3). The result is under `jax.lax.stop_gradient`.
    It is floored at the machine epsilon of the particles' dtype, so that one particle
    (J = 1) or coincident particles give a finite kernel instead of exp(−0/0).
    """
    differences = particles[:, None, :] - particles[None, :, :]
    squared_distances = jnp.sum(differences**2, axis=-1)
    num_particles = particles.shape[0]
    squared_lengthscale = jnp.median(squared_distances) / math.log(num_particles + 1)
    floor = jnp.finfo(particles.dtype).eps
    return jax.lax.stop_gradient(jnp.maximum(squared_lengthscale, floor))


class RBF(AbstractParticleKernel):
    """κ(x, y) = exp(−‖x − y‖²/ℓ²), the particle kernel of SteinGP (notes/steingp.md eq 12).

    With `lengthscale=None` (the default), ℓ is re-estimated at every step by the median
    heuristic ℓ² = median(D²)/log(J + 1) (`median_squared_lengthscale`). Otherwise ℓ is
    the fixed `lengthscale`. The bandwidth this kernel reports is ℓ.
    """

    lengthscale: Float[Array, ""] | None

    def __init__(self, lengthscale: Float[ArrayLike, ""] | None = None):
        self.lengthscale = None if lengthscale is None else jnp.asarray(lengthscale)

    def __check_init__(self):
        if self.lengthscale is not None and self.lengthscale.shape != ():
            raise ValueError(f"`lengthscale` must be a scalar, got shape {self.lengthscale.shape}.")

    def bandwidth(self, particles: Float[Array, "J P"]) -> Float[Array, ""]:
        """ℓ: the fixed lengthscale, or the median heuristic of the particles."""
        if self.lengthscale is None:
            return jnp.sqrt(median_squared_lengthscale(particles))
        return self.lengthscale.astype(particles.dtype)

    def __call__(self, x: Float[Array, " P"], y: Float[Array, " P"], bandwidth: Float[Array, ""]) -> Float[Array, ""]:
        return jnp.exp(-jnp.sum((x - y) ** 2) / bandwidth**2)

    def mixed_hessian_trace(
        self, x: Float[Array, " P"], y: Float[Array, " P"], bandwidth: Float[Array, ""]
    ) -> Float[Array, ""]:
        """tr(∇_x ∇_y κ) = (2P/ℓ² − 4‖x − y‖²/ℓ⁴) κ(x, y)."""
        squared_distance = jnp.sum((x - y) ** 2)
        squared_lengthscale = bandwidth**2
        dimension = x.shape[0]
        return (2 * dimension / squared_lengthscale - 4 * squared_distance / squared_lengthscale**2) * jnp.exp(
            -squared_distance / squared_lengthscale
        )
