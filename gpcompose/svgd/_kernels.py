import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PyTree

from ..kernels import squared_distances


class AbstractParticleKernel(eqx.Module):
    """A positive-definite kernel κ(x, y) between two flattened particles, used by SVGD.

    A kernel has two parts. `bandwidth(particles)` computes whatever the kernel adapts
    to the current particle cloud (any pytree of arrays, e.g. a median-heuristic
    lengthscale) once per step. `__call__(x, y, bandwidth)` evaluates κ on two single
    particles of shape `(P,)`. SVGD differentiates `__call__` by autodiff, so a user
    kernel only needs these two methods. It may override `mixed_hessian_trace` with a
    closed form, because the generic one costs O(P²) per pair of particles. It may also
    override `stein_terms`, which SVGD calls once per step, with a closed form over all
    pairs at once, because the generic one holds J×J×P arrays of kernel gradients.

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

    def stein_terms(
        self, particles: Float[Array, "J P"], scores: Float[Array, "J P"], bandwidth: PyTree[Array]
    ) -> tuple[Float[Array, "J J"], Float[Array, "J P"], Float[Array, "J J"]]:
        """The kernel's terms of the SVGD direction and of the kernelised Stein discrepancy.

        With particles λ_1…λ_J and scores s_j = ∇ log p(λ_j) (`stein_variational_direction`):

        - the Gram matrix K_ab = κ(λ_a, λ_b);
        - the repulsion R_b = Σ_a ∇_x κ(λ_a, λ_b), the derivative with respect to the
          *summed* particle (Liu & Wang 2016, eq. 8);
        - the Stein kernel matrix U_ij = u(λ_i, λ_j) of Liu, Lee & Jordan (2016),
          u(x, y) = s(x)ᵀs(y) κ + s(x)ᵀ∇_y κ + ∇_x κᵀ s(y) + tr(∇_x ∇_y κ).

        This generic version evaluates κ and both of its gradients on every pair by autodiff
        of `__call__`, and the trace by `mixed_hessian_trace`. It works for any kernel, but
        holds two J×J×P arrays of gradients.

        **Returns:** `(gram, repulsion, stein_kernel)` of shapes `(J, J)`, `(J, P)`, `(J, J)`.
        """

        def pair_terms(x, y):
            value, (gradient_x, gradient_y) = jax.value_and_grad(self, argnums=(0, 1))(x, y, bandwidth)
            return value, gradient_x, gradient_y, self.mixed_hessian_trace(x, y, bandwidth)

        # Entry [a, b] of each array is a term of κ(λ_a, λ_b).
        over_pairs = jax.vmap(jax.vmap(pair_terms, in_axes=(None, 0)), in_axes=(0, None))
        gram, gradient_first, gradient_second, trace = over_pairs(particles, particles)
        repulsion = jnp.sum(gradient_first, axis=0)
        stein_kernel = (
            (scores @ scores.T) * gram
            + jnp.einsum("ip,ijp->ij", scores, gradient_second)
            + jnp.einsum("ijp,jp->ij", gradient_first, scores)
            + trace
        )
        return gram, repulsion, stein_kernel


def median_squared_lengthscale(particles: Float[Array, "J P"]) -> Float[Array, ""]:
    """ℓ² = median(D²)/log(J + 1), the median heuristic of Liu & Wang (2016).

    D² is the full J×J matrix of squared distances ‖λ_i − λ_j‖², with its zero
    diagonal and both triangles. This is the convention of Liu & Wang's code and of the
    SteinGP authors' code (the paper, Pinder, Nemeth & Leslie 2020, eq. 12, does not state the
    formula). The result is under `jax.lax.stop_gradient`.
    It is floored at the machine epsilon of the particles' dtype, so that one particle
    (J = 1) or coincident particles give a finite kernel instead of exp(−0/0).
    """
    num_particles = particles.shape[0]
    squared_lengthscale = jnp.median(squared_distances(particles, particles)) / math.log(num_particles + 1)
    floor = jnp.finfo(particles.dtype).eps
    return jax.lax.stop_gradient(jnp.maximum(squared_lengthscale, floor))


class RBF(AbstractParticleKernel):
    """κ(x, y) = exp(−‖x − y‖²/ℓ²), the particle kernel of SteinGP (Pinder, Nemeth & Leslie 2020, eq. 12).

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

    def stein_terms(
        self, particles: Float[Array, "J P"], scores: Float[Array, "J P"], bandwidth: Float[Array, ""]
    ) -> tuple[Float[Array, "J J"], Float[Array, "J P"], Float[Array, "J J"]]:
        """The Stein terms of `AbstractParticleKernel.stein_terms` in closed form, by J×J matrix products.

        With c = 2/ℓ², the gradients are ∇_x κ(x, y) = −c (x − y) κ = −∇_y κ(x, y), and
        tr(∇_x ∇_y κ) = (cP − c² ‖x − y‖²) κ. Summed over pairs, with D² the squared
        distances (from differences, with an exact zero diagonal), Λ the particles as rows,
        S the scores and H = S Λᵀ (H_ij = s_iᵀλ_j):

            K = exp(−D²/ℓ²),
            R_b = c (λ_b Σ_a K_ab − (KᵀΛ)_b),
            U_ij = K_ij [s_iᵀs_j + c (H_ii − H_ij) + c (H_jj − H_ji) + cP − c² D²_ij],

        where c (H_ii − H_ij) = s_iᵀ∇_y κ(λ_i, λ_j)/K_ij and c (H_jj − H_ji) = ∇_x κ(λ_i, λ_j)ᵀs_j/K_ij.
        R and the H terms depend only on differences of particles, so they are computed from
        the particles less their mean: in exact arithmetic this changes nothing, and in floating
        point it avoids cancellation when the cloud sits far from the origin. R's sums leave
        out a = b, whose term is zero: with K_bb = 1 included, the rounding of 1 + Σ_{a≠b} K_ab
        would swamp the repulsion of distant particles. Cost O(J²P) in matrix products, with O(J² + JP) memory.
        """
        squared_lengthscale = bandwidth**2
        scale = 2 / squared_lengthscale
        dimension = particles.shape[1]
        distances = squared_distances(particles, particles)
        gram = jnp.exp(-distances / squared_lengthscale)
        centred = particles - jnp.mean(particles, axis=0, keepdims=True)
        neighbour_gram = gram - jnp.eye(particles.shape[0], dtype=gram.dtype)
        repulsion = scale * (jnp.sum(neighbour_gram, axis=0)[:, None] * centred - neighbour_gram.T @ centred)
        score_particle_products = scores @ centred.T
        own_products = jnp.diag(score_particle_products)
        cross_terms = (
            own_products[:, None] - score_particle_products + own_products[None, :] - score_particle_products.T
        )
        stein_kernel = gram * (scores @ scores.T + scale * cross_terms + scale * dimension - scale**2 * distances)
        return gram, repulsion, stein_kernel
