"""Kernel mean embeddings of Gaussians and Gaussian mixtures.

For q = Σ_k w_k N(μ_k, Σ_k):
    z_{k,i} = E_{x~N(μ_k, Σ_k)}[k(x, z_i)]                        (component embeddings, K × M)
    Γ_{j,m} = E_{x~N(μ_j, Σ_j), x′~N(μ_m, Σ_m)}[k(x, x′)]         (component double embeddings)
    z_i = Σ_k w_k z_{k,i},  Γ = Σ_{j,m} w_j w_m Γ_{j,m}           (Naiff 2019, eqs. 4.11–4.15)
Stationary kernels go through `expected_kernel` (closed forms where they exist);
other kernels through Gauss–Hermite nodes of each Gaussian.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._linalg import cholesky
from .._validation import check_inputs
from ..kernels import AbstractKernel
from ._expected_kernel import expected_kernel, is_stationary
from ._gauss_hermite import default_degree, standard_normal_nodes
from ._measures import as_full, is_diagonal, measure_components


def _component_nodes(means, covariances, degree):
    """Gauss–Hermite nodes (K, P, D) and weights (P,) of every component."""
    dimension = means.shape[1]
    degree = default_degree(dimension) if degree is None else degree
    nodes, weights = standard_normal_nodes(dimension, degree, means.dtype)
    if is_diagonal(covariances):
        points = means[:, None, :] + nodes[None] * jnp.sqrt(covariances)[:, None, :]
    else:
        lowers = jax.vmap(lambda covariance: cholesky(covariance).lower)(covariances)
        points = means[:, None, :] + jnp.einsum("pd,ked->kpe", nodes, lowers)
    return points, weights


def component_kernel_means(
    kernel: AbstractKernel, measure, Z: Float[ArrayLike, "M D"], *, degree: int | None = None
) -> Float[Array, "K M"]:
    """z_{k,i} = E_{x~N(μ_k, Σ_k)}[k(x, Z_i)] for every component k and point Z_i."""
    _, means, covariances, _ = measure_components(measure)
    Z = check_inputs(Z, "Z", dimension=means.shape[1]).astype(means.dtype)
    if is_stationary(kernel):
        one = lambda mean, covariance, point: expected_kernel(kernel, mean - point, covariance, degree)
        return jax.vmap(lambda mean, cov: jax.vmap(lambda point: one(mean, cov, point))(Z))(means, covariances)
    points, weights = _component_nodes(means, covariances, degree)
    return jax.vmap(lambda nodes: weights @ kernel.cross(nodes, Z))(points)


def component_kernel_double_means(
    kernel: AbstractKernel, measure_a, measure_b, *, degree: int | None = None
) -> Float[Array, "Ka Kb"]:
    """Γ_{j,m} = E[k(x, x′)] for x from component j of `measure_a`, x′ from component m of `measure_b`."""
    _, means_a, covariances_a, _ = measure_components(measure_a)
    _, means_b, covariances_b, _ = measure_components(measure_b)
    if means_a.shape[1] != means_b.shape[1]:
        raise ValueError(f"`measure_a` and `measure_b` have dimensions {means_a.shape[1]} and {means_b.shape[1]}.")
    if is_stationary(kernel):
        if is_diagonal(covariances_a) != is_diagonal(covariances_b):
            covariances_a = jax.vmap(as_full)(covariances_a)
            covariances_b = jax.vmap(as_full)(covariances_b)
        one = lambda mean_a, cov_a, mean_b, cov_b: expected_kernel(kernel, mean_a - mean_b, cov_a + cov_b, degree)
        return jax.vmap(
            lambda mean_a, cov_a: jax.vmap(lambda mean_b, cov_b: one(mean_a, cov_a, mean_b, cov_b))(
                means_b, covariances_b
            )
        )(means_a, covariances_a)
    points_a, weights_a = _component_nodes(means_a, covariances_a, degree)
    points_b, weights_b = _component_nodes(means_b, covariances_b, degree)
    return jax.vmap(
        lambda nodes_a: jax.vmap(lambda nodes_b: weights_a @ kernel.cross(nodes_a, nodes_b) @ weights_b)(points_b)
    )(points_a)


def kernel_mean(
    kernel: AbstractKernel, measure, Z: Float[ArrayLike, "M D"], *, degree: int | None = None
) -> Float[Array, " M"]:
    """z_i = E_{x~q}[k(x, Z_i)] for a Gaussian mixture or a Gaussian q."""
    weights = measure_components(measure)[0]
    return weights @ component_kernel_means(kernel, measure, Z, degree=degree)


def kernel_double_mean(kernel: AbstractKernel, measure_a, measure_b, *, degree: int | None = None) -> Float[Array, ""]:
    """Γ = E_{x~a, x′~b}[k(x, x′)] with x and x′ independent."""
    weights_a = measure_components(measure_a)[0]
    weights_b = measure_components(measure_b)[0]
    return weights_a @ component_kernel_double_means(kernel, measure_a, measure_b, degree=degree) @ weights_b
