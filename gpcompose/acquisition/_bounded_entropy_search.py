import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class BoundedEntropySearchCache(eqx.Module):
    """Per-iteration quantities of BES (Nguyen et al. 2021, App. B.2), computed once:
    the sample maximisers x_m⁺ and maxima g_m⁺, the log weights log π(g_m), and the
    current predictive mean μ_m = μ(x_m⁺) and variance s_m² = σ²(x_m⁺)."""

    x_max: Float[Array, "M D"]
    value_max: Float[Array, " M"]
    log_weights: Float[Array, " M"]
    mean: Float[Array, " M"]
    variance: Float[Array, " M"]


def bounded_entropy_search(
    cache: BoundedEntropySearchCache,
    lookahead_variance: Float[Array, " M"],
    *,
    variance_floor: float = 1e-9,
) -> Float[Array, ""]:
    """BES (Nguyen, Deisenroth & Osborne 2021, §4, eqs. 8–11) in closed form, from the
    factorisations of their eqs. 10–11:

        A_m(x) = w_m N(g_m⁺ | μ_m, s_{m,x}²),
        α(x) = (1/M) Σ_m A_m(x) [½ log(s_m²/s_{m,x}²) − ½ (g_m⁺ − μ_m)² (1/s_{m,x}² − 1/s_m²)],

    i.e. (1/M) Σ_m p_x log(p_x/p) with p = π N(g⁺|μ, s²), p_x = π N(g⁺|μ_x, s_x²) under the
    paper's μ_x ≈ μ (which makes the expectation over y_x trivial). w = softmax(log π):
    normalising does not move the argmax, and a weight of −∞ drops a sample exactly.
    `lookahead_variance` is s_{m,x}² = σ_x²(x_m⁺), the variance at the maximisers after
    adding x (e.g. `gp.lookahead_variance`). Variances are floored at `variance_floor`.
    """
    num_samples = cache.value_max.shape[0]
    if lookahead_variance.shape != (num_samples,):
        raise ValueError(f"`lookahead_variance` must have shape ({num_samples},), got {lookahead_variance.shape}.")
    variance = jnp.maximum(cache.variance, variance_floor)
    after = jnp.maximum(jnp.minimum(lookahead_variance, variance), variance_floor)
    squared_gap = (cache.value_max - cache.mean) ** 2
    log_density_after = -0.5 * squared_gap / after - 0.5 * jnp.log(2 * math.pi * after)
    log_amplitude = jax.nn.log_softmax(cache.log_weights) + log_density_after
    information = 0.5 * jnp.log(variance / after) - 0.5 * squared_gap * (1.0 / after - 1.0 / variance)
    return jnp.sum(jnp.exp(log_amplitude) * information) / num_samples
