"""A compact CMA-ES that maximises a log density and records every evaluation (SVBMC initial sets).

Hansen's standard (μ/μ_w, λ)-CMA-ES with rank-one and rank-μ covariance updates and cumulative
step-size adaptation (CSA), as summarised in N. Hansen, "The CMA Evolution Strategy: A Tutorial",
arXiv:1604.00772 (2016), Table 1 and Fig. 6 / App. A, with positive recombination weights only.
For dimension n and population size λ (default 4 + ⌊3 ln n⌋), μ = ⌊λ/2⌋ and

    w_i ∝ ln((λ + 1)/2) − ln i (i ≤ μ, Σ w_i = 1),   μ_eff = 1/Σ w_i²,
    c_σ = (μ_eff + 2)/(n + μ_eff + 5),   d_σ = 1 + 2 max(0, √((μ_eff − 1)/(n + 1)) − 1) + c_σ,
    c_c = (4 + μ_eff/n)/(n + 4 + 2μ_eff/n),   c_1 = 2/((n + 1.3)² + μ_eff),
    c_μ = min(1 − c_1, 2(μ_eff − 2 + 1/μ_eff)/((n + 2)² + μ_eff)),   E‖N(0, I)‖ ≈ √n(1 − 1/(4n) + 1/(21n²)).

One generation g, with C = B diag(d²) Bᵀ:

    y_k = B diag(d) z_k, z_k ~ N(0, I);  x_k = m + σ y_k;  rank by log p(x_k), best first;
    ⟨y⟩ = Σ_{i≤μ} w_i y_{i:λ};  m ← m + σ⟨y⟩;
    p_σ ← (1 − c_σ) p_σ + √(c_σ(2 − c_σ)μ_eff) B diag(d)⁻¹ Bᵀ ⟨y⟩;  σ ← σ exp((c_σ/d_σ)(‖p_σ‖/E‖N(0, I)‖ − 1));
    h_σ = 1[‖p_σ‖/√(1 − (1 − c_σ)^{2(g+1)}) < (1.4 + 2/(n + 1)) E‖N(0, I)‖];
    p_c ← (1 − c_c) p_c + h_σ √(c_c(2 − c_c)μ_eff) ⟨y⟩;
    C ← (1 − c_1 − c_μ) C + c_1 (p_c p_cᵀ + (1 − h_σ) c_c(2 − c_c) C) + c_μ Σ_{i≤μ} w_i y_{i:λ} y_{i:λ}ᵀ.

The budget is spent exactly: ⌊N/λ⌋ full generations, then N mod λ further points drawn from the final
search distribution N(m, σ²C) and evaluated without an update. No stopping rule: SVBMC uses every
evaluation (Li, Clarté & Acerbi 2023, §5); restarts from random starts are a `jax.vmap` over keys and x₀.
NaN values rank last (as −∞) and are returned as evaluated.
"""

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from gpcompose._errors import error_if
from gpcompose._jit import public_jit


class _CMAState(eqx.Module):
    mean: Float[Array, " D"]
    step_size: Float[Array, ""]
    covariance: Float[Array, "D D"]
    evolution_path_sigma: Float[Array, " D"]
    evolution_path_covariance: Float[Array, " D"]
    generation: Float[Array, ""]


def _eigen_factors(covariance):
    """B and d with C = B diag(d²) Bᵀ; d² is floored at ε·max(d²) against round-off."""
    symmetric = 0.5 * (covariance + covariance.T)
    eigenvalues, eigenvectors = jnp.linalg.eigh(symmetric)
    floor = jnp.finfo(covariance.dtype).eps * jnp.max(eigenvalues)
    return eigenvectors, jnp.sqrt(jnp.maximum(eigenvalues, floor))


def _sample_steps(key, eigenvectors, scales, num_points):
    """y_k = B diag(d) z_k for z_k ~ N(0, I), as rows."""
    standard = jax.random.normal(key, (num_points, scales.shape[0]), scales.dtype)
    return (standard * scales[None, :]) @ eigenvectors.T


class _Strategy(NamedTuple):
    """The constants of one CMA-ES run (module docstring): λ, μ, the recombination weights
    w_i and μ_eff, c_σ, d_σ, c_c, c_1, c_μ, E‖N(0, I)‖ and the two path normalisers
    √(c_σ(2 − c_σ)μ_eff) and √(c_c(2 − c_c)μ_eff)."""

    population: int
    num_parents: int
    weights: Float[Array, " mu"]
    effective_parents: float
    sigma_rate: float
    sigma_damping: float
    path_rate: float
    rank_one_rate: float
    rank_mu_rate: float
    expected_normal_norm: float
    sigma_path_scale: float
    covariance_path_scale: float


def _checked_arguments(x0, sigma0, num_evaluations: int, population_size: int | None):
    """(x0, σ₀, λ) of `cma_es_evaluations`, checked: x0 a floating (D,) array, λ (default
    4 + ⌊3 ln D⌋) at least 2, a positive budget and a positive scalar σ₀ in x0's dtype."""
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"`x0` must have shape (D,), got shape {x0.shape}.")
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        raise ValueError(f"`x0` must be floating, got dtype {x0.dtype}.")
    dimension = x0.shape[0]
    population = 4 + int(3 * math.log(dimension)) if population_size is None else population_size
    if population < 2:
        raise ValueError(f"`population_size` must be at least 2, got {population}.")
    if num_evaluations < 1:
        raise ValueError(f"`num_evaluations` must be positive, got {num_evaluations}.")
    sigma0 = jnp.asarray(sigma0, x0.dtype)
    if sigma0.shape != ():
        raise ValueError(f"`sigma0` must be a scalar, got shape {sigma0.shape}.")
    sigma0 = error_if(sigma0, ~(sigma0 > 0), "`sigma0` must be positive.")
    return x0, sigma0, population


def _strategy(dimension: int, population: int, dtype) -> _Strategy:
    """Hansen's default constants (Table 1 of the tutorial) for dimension n and population λ,
    with positive recombination weights only."""
    num_parents = population // 2
    raw_weights = math.log((population + 1) / 2) - np.log(np.arange(1, num_parents + 1))
    weights_numpy = raw_weights / np.sum(raw_weights)
    effective_parents = float(1.0 / np.sum(weights_numpy**2))
    weights = jnp.asarray(weights_numpy, dtype)
    n = float(dimension)
    sigma_rate = (effective_parents + 2.0) / (n + effective_parents + 5.0)
    sigma_damping = 1.0 + 2.0 * max(0.0, math.sqrt((effective_parents - 1.0) / (n + 1.0)) - 1.0) + sigma_rate
    path_rate = (4.0 + effective_parents / n) / (n + 4.0 + 2.0 * effective_parents / n)
    rank_one_rate = 2.0 / ((n + 1.3) ** 2 + effective_parents)
    rank_mu_rate = min(
        1.0 - rank_one_rate,
        2.0 * (effective_parents - 2.0 + 1.0 / effective_parents) / ((n + 2.0) ** 2 + effective_parents),
    )
    expected_normal_norm = math.sqrt(n) * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n**2))
    sigma_path_scale = math.sqrt(sigma_rate * (2.0 - sigma_rate) * effective_parents)
    covariance_path_scale = math.sqrt(path_rate * (2.0 - path_rate) * effective_parents)
    return _Strategy(
        population,
        num_parents,
        weights,
        effective_parents,
        sigma_rate,
        sigma_damping,
        path_rate,
        rank_one_rate,
        rank_mu_rate,
        expected_normal_norm,
        sigma_path_scale,
        covariance_path_scale,
    )


def _generation(log_density, strategy: _Strategy, state: _CMAState, generation_key):
    """One generation g (module docstring): sample and evaluate λ points, recombine the μ best
    (NaN ranks last), and update m, σ (CSA), p_σ, p_c and C. Returns the new state and the
    generation's (points, values)."""
    s = strategy
    n = float(state.mean.shape[0])
    eigenvectors, scales = _eigen_factors(state.covariance)
    steps = _sample_steps(generation_key, eigenvectors, scales, s.population)
    points = state.mean[None, :] + state.step_size * steps
    values = jax.vmap(log_density)(points)
    ranking = jnp.where(jnp.isnan(values), -jnp.inf, values)
    parents = steps[jnp.argsort(-ranking)[: s.num_parents]]
    mean_step = s.weights @ parents
    whitened_step = eigenvectors @ ((eigenvectors.T @ mean_step) / scales)
    path_sigma = (1.0 - s.sigma_rate) * state.evolution_path_sigma + s.sigma_path_scale * whitened_step
    path_sigma_norm = jnp.linalg.norm(path_sigma)
    step_size = state.step_size * jnp.exp(
        (s.sigma_rate / s.sigma_damping) * (path_sigma_norm / s.expected_normal_norm - 1)
    )
    bias_correction = jnp.sqrt(1.0 - (1.0 - s.sigma_rate) ** (2.0 * (state.generation + 1.0)))
    is_path_short = path_sigma_norm / bias_correction < (1.4 + 2.0 / (n + 1.0)) * s.expected_normal_norm
    h_sigma = is_path_short.astype(state.mean.dtype)
    path_covariance = (1.0 - s.path_rate) * state.evolution_path_covariance
    path_covariance = path_covariance + h_sigma * s.covariance_path_scale * mean_step
    rank_mu = (parents * s.weights[:, None]).T @ parents
    rank_one = (
        jnp.outer(path_covariance, path_covariance)
        + (1.0 - h_sigma) * s.path_rate * (2.0 - s.path_rate) * state.covariance
    )
    covariance = (1.0 - s.rank_one_rate - s.rank_mu_rate) * state.covariance + s.rank_one_rate * rank_one
    covariance = covariance + s.rank_mu_rate * rank_mu
    new_state = _CMAState(
        state.mean + state.step_size * mean_step,
        step_size,
        0.5 * (covariance + covariance.T),
        path_sigma,
        path_covariance,
        state.generation + 1.0,
    )
    return new_state, (points, values)


def _initial_state(x0, sigma0) -> _CMAState:
    """Generation 0: mean x0, step size σ₀, C = I and both evolution paths at 0."""
    dimension, dtype = x0.shape[0], x0.dtype
    return _CMAState(
        x0,
        sigma0,
        jnp.eye(dimension, dtype=dtype),
        jnp.zeros(dimension, dtype),
        jnp.zeros(dimension, dtype),
        jnp.zeros((), dtype),
    )


def _final_points(state: _CMAState, key, num_points: int):
    """`num_points` points drawn from the final search distribution N(m, σ²C), without an
    update: the part of the budget that a whole generation would overrun."""
    eigenvectors, scales = _eigen_factors(state.covariance)
    return state.mean[None, :] + state.step_size * _sample_steps(key, eigenvectors, scales, num_points)


@public_jit(static_argnames=("num_evaluations", "population_size"))
def cma_es_evaluations(
    log_density: Callable[[Float[Array, " D"]], Float[Array, ""]],
    key: PRNGKeyArray,
    x0: Float[ArrayLike, " D"],
    sigma0: Float[ArrayLike, ""],
    num_evaluations: int,
    population_size: int | None = None,
) -> tuple[Float[Array, "num_evaluations D"], Float[Array, " num_evaluations"]]:
    """Maximise `log_density` by CMA-ES from mean `x0` and step size `sigma0`, spending exactly
    `num_evaluations` evaluations.

    **Arguments:**
    - `log_density`: JAX-traceable function of one point (D,) to a scalar; it is `vmap`-ed over a generation.
    - `key`: PRNG key. `x0`: initial mean, shape (D,), floating. `sigma0`: initial step size, > 0.
    - `num_evaluations`: static budget. `population_size`: λ, static; default 4 + ⌊3 ln D⌋.

    **Returns:** `(points, values)` of shapes (num_evaluations, D) and (num_evaluations,), in the order evaluated.
    """
    x0, sigma0, population = _checked_arguments(x0, sigma0, num_evaluations, population_size)
    dimension = x0.shape[0]
    strategy = _strategy(dimension, population, x0.dtype)
    generation = functools.partial(_generation, log_density, strategy)
    initial = _initial_state(x0, sigma0)
    num_generations, remainder = divmod(num_evaluations, population)
    scan_key, remainder_key = jax.random.split(key)
    final, (points, values) = jax.lax.scan(generation, initial, jax.random.split(scan_key, num_generations))
    points = points.reshape(num_generations * population, dimension)
    values = values.reshape(num_generations * population)
    if remainder > 0:
        extra_points = _final_points(final, remainder_key, remainder)
        points = jnp.concatenate([points, extra_points])
        values = jnp.concatenate([values, jax.vmap(log_density)(extra_points)])
    return points, values
