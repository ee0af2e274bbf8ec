"""Posterior-approximation metrics of the SVBMC/VBMC benchmarks.

- `gskl`: Gaussianised symmetrised KL, ½[KL(p‖q) + KL(q‖p)] between the moment-matched
  Gaussians of two distributions (Acerbi 2020; Li, Clarté & Acerbi 2023, §5).
- `mmtv`: mean marginal total variation, (1/D) Σ_d ½ ∫ |p_d − q_d|, with the 1-D
  marginals estimated from samples by binned Gaussian kernel density estimates.
- `delta_lml`: |estimated − true log marginal likelihood|.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..mixtures import gaussian_kl


def gskl(
    mean_p: Float[ArrayLike, " D"],
    covariance_p: Float[ArrayLike, "D D"],
    mean_q: Float[ArrayLike, " D"],
    covariance_q: Float[ArrayLike, "D D"],
) -> Float[Array, ""]:
    """½[KL(N_p ‖ N_q) + KL(N_q ‖ N_p)] for Gaussians given by mean and covariance."""
    mean_p, mean_q = jnp.asarray(mean_p), jnp.asarray(mean_q)
    covariance_p = jnp.atleast_2d(jnp.asarray(covariance_p))
    covariance_q = jnp.atleast_2d(jnp.asarray(covariance_q))
    mean_p, mean_q = jnp.atleast_1d(mean_p), jnp.atleast_1d(mean_q)
    dimension = mean_p.shape[0]
    for name, array, shape in (
        ("mean_q", mean_q, (dimension,)),
        ("covariance_p", covariance_p, (dimension, dimension)),
        ("covariance_q", covariance_q, (dimension, dimension)),
    ):
        if array.shape != shape:
            raise ValueError(f"`{name}` must have shape {shape}, got shape {array.shape}.")
    forward = gaussian_kl(mean_p, covariance_p, mean_q, covariance_q)
    backward = gaussian_kl(mean_q, covariance_q, mean_p, covariance_p)
    return 0.5 * (forward + backward)


def _silverman_bandwidth(samples: Float[Array, " N"]) -> Float[Array, ""]:
    """0.9 · min(sd, IQR/1.34) · N^{−1/5} (Silverman's rule of thumb)."""
    quartiles = jnp.percentile(samples, jnp.array([25.0, 75.0]))
    spread = jnp.minimum(jnp.std(samples), (quartiles[1] - quartiles[0]) / 1.34)
    return 0.9 * spread * samples.shape[0] ** (-0.2)


def _binned_density(samples, edges, bandwidth):
    """Gaussian KDE on the bin centres: a histogram convolved with the discretised kernel."""
    width = edges[1] - edges[0]
    counts, _ = jnp.histogram(samples, bins=edges)
    density = counts / (samples.shape[0] * width)
    half = edges.shape[0] // 2
    offsets = jnp.arange(-half, half + 1, dtype=width.dtype) * width
    kernel = jnp.exp(-0.5 * (offsets / bandwidth) ** 2)
    kernel = kernel / jnp.sum(kernel)
    return jnp.convolve(density, kernel, mode="same")


def _marginal_total_variation(samples_p, samples_q, num_bins):
    bandwidth_p = _silverman_bandwidth(samples_p)
    bandwidth_q = _silverman_bandwidth(samples_q)
    margin = 5.0 * jnp.maximum(bandwidth_p, bandwidth_q)
    lower = jnp.minimum(jnp.min(samples_p), jnp.min(samples_q)) - margin
    upper = jnp.maximum(jnp.max(samples_p), jnp.max(samples_q)) + margin
    edges = jnp.linspace(lower, upper, num_bins + 1)
    width = edges[1] - edges[0]
    density_p = _binned_density(samples_p, edges, jnp.maximum(bandwidth_p, width))
    density_q = _binned_density(samples_q, edges, jnp.maximum(bandwidth_q, width))
    return 0.5 * jnp.sum(jnp.abs(density_p - density_q)) * width


def mmtv(
    samples_p: Float[ArrayLike, "N D"], samples_q: Float[ArrayLike, "M D"], num_bins: int = 1024
) -> Float[Array, ""]:
    """Mean marginal total variation between two sample sets (0 = identical marginals, 1 = disjoint)."""
    samples_p, samples_q = jnp.asarray(samples_p), jnp.asarray(samples_q)
    if samples_p.ndim != 2 or samples_q.ndim != 2 or samples_p.shape[1] != samples_q.shape[1]:
        raise ValueError(
            f"`samples_p` and `samples_q` must be (N, D) and (M, D), got {samples_p.shape} and {samples_q.shape}."
        )
    per_dimension = jax.vmap(lambda p, q: _marginal_total_variation(p, q, num_bins), in_axes=(1, 1))(
        samples_p, samples_q
    )
    return jnp.mean(per_dimension)


def delta_lml(estimate: Float[ArrayLike, ""], truth: Float[ArrayLike, ""]) -> Float[Array, ""]:
    """|estimate − truth| of the log marginal likelihood."""
    return jnp.abs(jnp.asarray(estimate) - jnp.asarray(truth))
