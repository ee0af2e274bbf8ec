"""Dense brute-force references and finite differences shared by the tests."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree


def dense_kernel(kernel, A, B):
    return np.asarray(kernel.cross(jnp.asarray(A), jnp.asarray(B)))


def dense_exact_posterior(kernel, mean, X, y, noise, X_new):
    """Mean, covariance and log marginal likelihood by explicit inverses (float64 numpy)."""
    K = dense_kernel(kernel, X, X) + np.diag(noise)
    Ks = dense_kernel(kernel, X, X_new)
    Kss = dense_kernel(kernel, X_new, X_new)
    residual = np.asarray(y) - np.asarray(mean(jnp.asarray(X)))
    inverse = np.linalg.inv(K)
    mu = np.asarray(mean(jnp.asarray(X_new))) + Ks.T @ inverse @ residual
    cov = Kss - Ks.T @ inverse @ Ks
    sign, logdet = np.linalg.slogdet(K)
    lml = -0.5 * residual @ inverse @ residual - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi)
    return mu, cov, lml


def dense_sparse_posterior(kernel, mean, X, y, noise, Z, X_new, relative_jitter=0.0):
    """SGPR predictive and collapsed bound by the textbook (unstable) formulae, with
    K_ZZ + ε I, ε = relative_jitter · mean(diag K_ZZ), in place of K_ZZ."""
    Kzz = dense_kernel(kernel, Z, Z)
    Kzz = Kzz + relative_jitter * np.mean(np.diag(Kzz)) * np.eye(Kzz.shape[0])
    Kzx = dense_kernel(kernel, Z, X)
    Kzs = dense_kernel(kernel, Z, X_new)
    Kss = dense_kernel(kernel, X_new, X_new)
    Kxx_diag = np.diag(dense_kernel(kernel, X, X))
    residual = np.asarray(y) - np.asarray(mean(jnp.asarray(X)))
    D_inv = np.diag(1.0 / np.asarray(noise))
    Sigma = np.linalg.inv(Kzz + Kzx @ D_inv @ Kzx.T)
    mu = np.asarray(mean(jnp.asarray(X_new))) + Kzs.T @ Sigma @ Kzx @ D_inv @ residual
    cov = Kss - Kzs.T @ (np.linalg.inv(Kzz) - Sigma) @ Kzs
    Q = Kzx.T @ np.linalg.solve(Kzz, Kzx)
    C = Q + np.diag(noise)
    sign, logdet = np.linalg.slogdet(C)
    log_normal = -0.5 * residual @ np.linalg.solve(C, residual) - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi)
    bound = log_normal - 0.5 * np.sum((Kxx_diag - np.diag(Q)) / np.asarray(noise))
    return mu, cov, bound


def finite_difference_gradient(function, tree, step=1e-6):
    """Central differences of a scalar function of the raveled floating leaves of `tree`."""
    vector, unravel = ravel_pytree(tree)
    vector = np.asarray(vector, dtype=np.float64)
    gradient = np.zeros_like(vector)
    for index in range(vector.size):
        shift = np.zeros_like(vector)
        shift[index] = step
        upper = float(function(unravel(jnp.asarray(vector + shift))))
        lower = float(function(unravel(jnp.asarray(vector - shift))))
        gradient[index] = (upper - lower) / (2 * step)
    return gradient


def autodiff_gradient(function, tree):
    return np.asarray(ravel_pytree(jax.grad(function)(tree))[0])


def dense_grid_posterior(K, log_likelihood, half_width=9.0, num_points=601):
    """Mean, variance and log evidence of p(f) ∝ N(f; 0, K) Π_i exp(log_likelihood(f)_i) for N = 2 by
    a dense tensor grid on [−half_width, half_width]²; `log_likelihood` maps `(P, 2)` points to `(P, 2)`."""
    grid = np.linspace(-half_width, half_width, num_points)
    first, second = np.meshgrid(grid, grid, indexing="ij")
    points = np.stack([first.ravel(), second.ravel()], 1)
    log_prior = -0.5 * np.sum(points @ np.linalg.inv(K) * points, 1) - 0.5 * np.log(np.linalg.det(2 * np.pi * K))
    log_joint = log_prior + np.sum(log_likelihood(points), 1)
    weights = np.exp(log_joint - log_joint.max())
    log_evidence = np.log(weights.sum() * (grid[1] - grid[0]) ** 2) + log_joint.max()
    mean = (weights[:, None] * points).sum(0) / weights.sum()
    variance = (weights[:, None] * (points - mean) ** 2).sum(0) / weights.sum()
    return mean, variance, log_evidence


def assert_moments_within_monte_carlo_error(samples, mean, covariance, num_standard_errors=5.0):
    """Sample means and centred cross-products against (mean, covariance), each within a few of its
    own Monte Carlo standard errors."""
    samples, mean, covariance = np.asarray(samples), np.asarray(mean), np.asarray(covariance)
    num_samples = samples.shape[0]
    mean_error = np.std(samples, axis=0) / math.sqrt(num_samples)
    np.testing.assert_array_less(np.abs(samples.mean(axis=0) - mean), num_standard_errors * mean_error + 1e-12)
    centred = samples - mean
    products = centred[:, :, None] * centred[:, None, :]
    product_error = products.std(axis=0) / math.sqrt(num_samples)
    np.testing.assert_array_less(
        np.abs(products.mean(axis=0) - covariance), num_standard_errors * product_error + 1e-12
    )
