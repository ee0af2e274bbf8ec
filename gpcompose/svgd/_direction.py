import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PyTree

from ._kernels import AbstractParticleKernel


def stein_variational_direction(
    particles: Float[Array, "J P"],
    scores: Float[Array, "J P"],
    kernel: AbstractParticleKernel,
    bandwidth: PyTree[Array],
) -> tuple[Float[Array, "J P"], Float[Array, ""]]:
    """The SVGD direction at every particle and the squared kernelised Stein discrepancy.

    With particles λ_1…λ_J, scores s_j = ∇ log p(λ_j) and kernel κ (Liu & Wang 2016,
    eq. 8; SteinGP, notes/steingp.md §2.2):

        φ(λ_i) = (1/J) Σ_j [κ(λ_j, λ_i) s_j + ∇_{λ_j} κ(λ_j, λ_i)],   i.e.  Φ = (KᵀS + R)/J.

    The first term attracts particles towards high density. The second term repels them from
    each other. It is the derivative with respect to the *summed* particle λ_j, computed by
    autodiff, so any kernel works. The SteinGP document's eq. 5 differentiates with respect
    to the evaluation point λ_i instead. For the RBF kernel that term attracts, and it is a
    sign error (notes/steingp.md §2.2, erratum).

    The V-statistic of the squared kernelised Stein discrepancy (Liu, Lee & Jordan 2016) is

        KSD² = (1/J²) Σ_{i,j} u(λ_i, λ_j),
        u(x, y) = s(x)ᵀs(y) κ + s(x)ᵀ∇_y κ + ∇_x κᵀ s(y) + tr(∇_x ∇_y κ).

    It is the squared RKHS norm of the optimal direction, so it is ≥ 0 and is 0 exactly
    when the particles satisfy Stein's identity. Cost: O(J² P) plus J² calls of
    `kernel.mixed_hessian_trace`.

    **Arguments:**

    - `particles`: the flattened particles, one row each.
    - `scores`: ∇ log p at each particle, flattened the same way.
    - `kernel`: the particle kernel.
    - `bandwidth`: `kernel.bandwidth(particles)`, held fixed.

    **Returns:** `(direction, squared_kernel_stein_discrepancy)`, with the direction of
    shape `(J, P)`.
    """
    if particles.ndim != 2 or scores.shape != particles.shape:
        raise ValueError(
            "`particles` and `scores` must both have shape (num_particles, dimension), "
            f"got shapes {particles.shape} and {scores.shape}."
        )

    def pair_terms(x, y):
        value, (gradient_x, gradient_y) = jax.value_and_grad(kernel, argnums=(0, 1))(x, y, bandwidth)
        return value, gradient_x, gradient_y, kernel.mixed_hessian_trace(x, y, bandwidth)

    # Entry [a, b] of each array is a term of κ(λ_a, λ_b).
    over_pairs = jax.vmap(jax.vmap(pair_terms, in_axes=(None, 0)), in_axes=(0, None))
    gram, gradient_first, gradient_second, trace = over_pairs(particles, particles)

    num_particles = particles.shape[0]
    attraction = jnp.einsum("ji,jp->ip", gram, scores)
    repulsion = jnp.sum(gradient_first, axis=0)
    direction = (attraction + repulsion) / num_particles

    score_products = scores @ scores.T
    stein_kernel = (
        score_products * gram
        + jnp.einsum("ip,ijp->ij", scores, gradient_second)
        + jnp.einsum("ijp,jp->ij", gradient_first, scores)
        + trace
    )
    return direction, jnp.mean(stein_kernel)
