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
    eq. 8; SteinGP, Pinder, Nemeth & Leslie 2020, eq. 5 with the sign corrected below):

        φ(λ_i) = (1/J) Σ_j [κ(λ_j, λ_i) s_j + ∇_{λ_j} κ(λ_j, λ_i)],   i.e.  Φ = (KᵀS + R)/J.

    The first term attracts particles towards high density. The second term repels them from
    each other. It is the derivative with respect to the *summed* particle λ_j, so any
    kernel works by autodiff. Eq. 5 of Pinder, Nemeth & Leslie (2020) differentiates with respect
    to the evaluation point λ_i instead. For the RBF kernel that term attracts, and it is a
    sign error.

    The V-statistic of the squared kernelised Stein discrepancy (Liu, Lee & Jordan 2016) is

        KSD² = (1/J²) Σ_{i,j} u(λ_i, λ_j),
        u(x, y) = s(x)ᵀs(y) κ + s(x)ᵀ∇_y κ + ∇_x κᵀ s(y) + tr(∇_x ∇_y κ).

    It is the squared RKHS norm of the optimal direction, so it is ≥ 0 and is 0 exactly
    when the particles satisfy Stein's identity. K, R and the matrix of u come from
    `kernel.stein_terms`. Cost: O(J² P) for the attraction, plus that of `stein_terms`:
    O(J² P) in matrix products for `RBF`'s closed form; for the generic autodiff form,
    two J×J×P arrays of kernel gradients and J² calls of `kernel.mixed_hessian_trace`.

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
    gram, repulsion, stein_kernel = kernel.stein_terms(particles, scores, bandwidth)
    attraction = jnp.einsum("ji,jp->ip", gram, scores)
    direction = (attraction + repulsion) / particles.shape[0]
    return direction, jnp.mean(stein_kernel)
