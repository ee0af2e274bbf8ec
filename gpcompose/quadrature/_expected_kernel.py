"""Gaussian expectations of kernels, the single primitive behind every embedding.

For a stationary kernel k(x, x′) = κ(x − x′) and independent Gaussians x ~ N(μ_a, S_a),
x′ ~ N(μ_b, S_b), the difference τ = x − x′ is N(μ_a − μ_b, S_a + S_b), so

    E[k(x, x′)] = E_{τ~N(δ, S)}[κ(τ)],  δ = μ_a − μ_b,  S = S_a + S_b.

A point is a Gaussian with S = 0. Closed forms: SquaredExponential (any S),
ProductMatern (diagonal S), Constant; Sum and Product combine them. ProductMatern with a
full S integrates the last coordinate in closed form and the others by Gauss–Legendre on
each side of the kink of ρ_ν at 0 (tensor Gauss–Hermite converges slowly across the kink:
a 1% error for ν = 1/2 at degree 64). Everything else uses tensor Gauss–Hermite in τ.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._linalg import cholesky, log_determinant, solve_triangular
from ..kernels import (
    AbstractKernel,
    AbstractStationaryKernel,
    Constant,
    Periodic,
    Product,
    ProductMatern,
    SquaredExponential,
    Sum,
    White,
    matern_correlation,
)
from ._gauss_hermite import default_degree, standard_normal_nodes
from ._matern_primitive import matern_gaussian_expectation

_STATIONARY_LEAVES = (AbstractStationaryKernel, ProductMatern, Periodic, Constant, White)


def is_stationary(kernel: AbstractKernel) -> bool:
    """Whether k(x, x′) depends on x − x′ only (checked structurally)."""
    if isinstance(kernel, (Sum, Product)):
        return is_stationary(kernel.left) and is_stationary(kernel.right)
    return isinstance(kernel, _STATIONARY_LEAVES)


def _restrict(active_dims, delta, covariance):
    """δ and S on the kernel's active dimensions."""
    if active_dims is None:
        return delta, covariance
    index = jnp.asarray(active_dims)
    if covariance.ndim == 1:
        return delta[index], covariance[index]
    return delta[index], covariance[index][:, index]


def _squared_exponential(kernel: SquaredExponential, delta, covariance):
    """σ² |I + A⁻¹S|^{−1/2} exp(−½ δᵀ(A + S)⁻¹δ), A = diag(ℓ²) (Naiff 2019, eq. 4.11)."""
    delta, covariance = _restrict(kernel.active_dims, delta, covariance)
    lengthscale_squared = jnp.broadcast_to(kernel.lengthscale.value**2, delta.shape)
    variance = kernel.variance.value
    if covariance.ndim == 1:
        total = lengthscale_squared + covariance
        log_value = -0.5 * jnp.sum(jnp.log(total / lengthscale_squared)) - 0.5 * jnp.sum(delta**2 / total)
        return variance * jnp.exp(log_value)
    lower = cholesky(jnp.diag(lengthscale_squared) + covariance).lower
    whitened = solve_triangular(lower, delta)
    log_value = -0.5 * (log_determinant(lower) - jnp.sum(jnp.log(lengthscale_squared))) - 0.5 * jnp.sum(whitened**2)
    return variance * jnp.exp(log_value)


def _product_matern(kernel: ProductMatern, delta, covariance):
    """σ² Π_d φ_ν(δ_d, S_dd) with the closed-form 1-D primitive (diagonal S only)."""
    delta, covariance = _restrict(kernel.active_dims, delta, covariance)
    lengthscale = jnp.broadcast_to(kernel.lengthscale.value, delta.shape)
    factors = matern_gaussian_expectation(kernel.smoothness, lengthscale, delta, covariance)
    return kernel.variance.value * jnp.prod(factors)


# Half-width, in standard deviations, of the range integrated by `_product_matern_full`.
_TRUNCATION = 10.0


def _product_matern_full(kernel: ProductMatern, delta, covariance, degree: int | None):
    """σ² E_{τ~N(δ, S)}[Π_d ρ_ν(|τ_d|/ℓ_d)] for a full S, by iterated integration.

    With τ = δ + Lξ (S = LLᵀ), τ_d given ξ_{<d} is N(o_d, L_dd²), o = δ + L_{:,<d} ξ_{<d}.
    The last coordinate is the closed-form 1-D primitive; every other ξ_d is integrated by
    Gauss–Legendre with `degree` nodes (default: a budget of about 20 000 points in all) on
    each side of the kink ξ_d = −o_d/L_dd, over |ξ_d| ≤ 10, where the integrand is smooth.
    """
    delta, covariance = _restrict(kernel.active_dims, delta, covariance)
    dimension = delta.shape[0]
    lengthscale = jnp.broadcast_to(kernel.lengthscale.value, delta.shape)
    lower = cholesky(covariance).lower
    num_nodes = max(2, default_degree(dimension - 1) // 2) if degree is None else degree
    unit_nodes, unit_weights = np.polynomial.legendre.leggauss(num_nodes)
    unit_nodes = jnp.asarray(unit_nodes, delta.dtype)
    unit_weights = jnp.asarray(unit_weights, delta.dtype)

    def integrate(level, offset):
        scale = lower[level, level]
        if level == dimension - 1:
            return matern_gaussian_expectation(kernel.smoothness, lengthscale[level], offset[level], scale**2)
        kink = jnp.clip(-offset[level] / scale, -_TRUNCATION, _TRUNCATION)
        nodes, weights = [], []
        for start, stop in ((-_TRUNCATION, kink), (kink, _TRUNCATION)):
            half_width = 0.5 * (stop - start)
            nodes.append(start + half_width * (unit_nodes + 1.0))
            weights.append(half_width * unit_weights)
        nodes, weights = jnp.concatenate(nodes), jnp.concatenate(weights)
        weights = weights * jnp.exp(-0.5 * nodes**2) / math.sqrt(2.0 * math.pi)

        def one(node):
            factor = matern_correlation(kernel.smoothness, jnp.abs(offset[level] + scale * node) / lengthscale[level])
            return factor * integrate(level + 1, offset + lower[:, level] * node)

        return jnp.sum(weights * jax.vmap(one)(nodes))

    return kernel.variance.value * integrate(0, delta)


def gauss_hermite_expected_kernel(kernel: AbstractKernel, delta, covariance, degree: int | None = None):
    """E_{τ~N(δ, S)}[k(τ, 0)] by tensor Gauss–Hermite over the kernel's active dimensions
    (all of them for kernels without `active_dims`, such as sums and products)."""
    full_dimension = delta.shape[0]
    active_dims = getattr(kernel, "active_dims", None)
    index = jnp.arange(full_dimension) if active_dims is None else jnp.asarray(active_dims)
    delta, covariance = _restrict(active_dims, delta, covariance)
    dimension = delta.shape[0]
    degree = default_degree(dimension) if degree is None else degree
    nodes, weights = standard_normal_nodes(dimension, degree, delta.dtype)
    if covariance.ndim == 1:
        points = delta[None, :] + nodes * jnp.sqrt(covariance)[None, :]
    else:
        points = delta[None, :] + nodes @ cholesky(covariance).lower.T
    origin = jnp.zeros((full_dimension,), delta.dtype)
    values = jax.vmap(lambda point: kernel.evaluate(origin.at[index].set(point), origin))(points)
    return jnp.sum(weights * values)


def _disjoint(left: AbstractKernel, right: AbstractKernel) -> bool:
    left_dims = getattr(left, "active_dims", None)
    right_dims = getattr(right, "active_dims", None)
    return left_dims is not None and right_dims is not None and not set(left_dims) & set(right_dims)


def expected_kernel(
    kernel: AbstractKernel,
    delta: Float[Array, " D"],
    covariance: Float[Array, " D"] | Float[Array, "D D"],
    degree: int | None = None,
) -> Float[Array, ""]:
    """E_{τ~N(δ, S)}[κ(τ)] for a stationary kernel, S a (D,) diagonal or a (D, D) matrix."""
    if isinstance(kernel, SquaredExponential):
        return _squared_exponential(kernel, delta, covariance)
    if isinstance(kernel, ProductMatern):
        if covariance.ndim == 1:
            return _product_matern(kernel, delta, covariance)
        return _product_matern_full(kernel, delta, covariance, degree)
    if isinstance(kernel, Constant):
        return kernel.variance.value
    if isinstance(kernel, Sum):
        return expected_kernel(kernel.left, delta, covariance, degree) + expected_kernel(
            kernel.right, delta, covariance, degree
        )
    if isinstance(kernel, Product):
        factorises = (
            isinstance(kernel.left, Constant)
            or isinstance(kernel.right, Constant)
            or (covariance.ndim == 1 and _disjoint(kernel.left, kernel.right))
        )
        if factorises:
            return expected_kernel(kernel.left, delta, covariance, degree) * expected_kernel(
                kernel.right, delta, covariance, degree
            )
    if not is_stationary(kernel):
        raise ValueError(f"`kernel` ({type(kernel).__name__}) is not stationary.")
    return gauss_hermite_expected_kernel(kernel, delta, covariance, degree)
