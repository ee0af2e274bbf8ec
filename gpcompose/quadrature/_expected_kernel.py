"""Gaussian expectations of kernels, the single primitive behind every embedding.

For a stationary kernel k(x, x′) = κ(x − x′) and independent Gaussians x ~ N(μ_a, S_a),
x′ ~ N(μ_b, S_b), the difference τ = x − x′ is N(μ_a − μ_b, S_a + S_b), so

    E[k(x, x′)] = E_{τ~N(δ, S)}[κ(τ)],  δ = μ_a − μ_b,  S = S_a + S_b.

A point is a Gaussian with S = 0. Closed forms: SquaredExponential (any S),
ProductMatern (diagonal S), Constant; Sum and Product combine them; everything else
uses tensor Gauss–Hermite in τ.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._linalg import cholesky, log_determinant, solve_triangular
from ..kernels import AbstractKernel, AbstractStationaryKernel, Constant, Periodic, Product, ProductMatern, SquaredExponential, Sum, White
from ..kernels._base import select_dims
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
    """σ² |I + A⁻¹S|^{−1/2} exp(−½ δᵀ(A + S)⁻¹δ), A = diag(ℓ²) (BVBMC eq. 4.11)."""
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
    if isinstance(kernel, ProductMatern) and covariance.ndim == 1:
        return _product_matern(kernel, delta, covariance)
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
