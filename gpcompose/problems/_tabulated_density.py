"""A one-dimensional density tabulated on a fine uniform grid, for exact-in-the-limit reference sampling.

The density is taken as piecewise constant on `num_cells` equal cells of [lower, upper], with cell
probabilities p_i ∝ exp(log p(t_i)) at the cell midpoints t_i. Sampling inverts the cumulative
distribution: a cell i is drawn with probability p_i (search of u ~ U(0, 1) in the cumulative sums),
then a point uniformly within the cell. The tables are built once in NumPy float64; moments are
midpoint sums Σ_i p_i g(t_i), whose error against the continuous density is O(h²) for a cell width h.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray


class TabulatedDensity(eqx.Module):
    """Piecewise-constant density on a uniform grid of cells; build it with `tabulate`."""

    lower: float
    cell_width: float
    cumulative_probabilities: Float[Array, " C"]
    log_normalizer: float

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "..."]:
        """Independent draws: a cell by inverse CDF, then a uniform position inside it."""
        cell_key, jitter_key = jax.random.split(key)
        dtype = self.cumulative_probabilities.dtype
        uniform = jax.random.uniform(cell_key, shape, dtype)
        last_cell = self.cumulative_probabilities.shape[0] - 1
        cell = jnp.minimum(jnp.searchsorted(self.cumulative_probabilities, uniform, side="right"), last_cell)
        jitter = jax.random.uniform(jitter_key, shape, dtype)
        return self.lower + self.cell_width * (cell.astype(dtype) + jitter)


def tabulate(
    log_density: Callable[[np.ndarray], np.ndarray], lower: float, upper: float, num_cells: int
) -> tuple[TabulatedDensity, Callable[[Callable[[np.ndarray], np.ndarray]], float]]:
    """Tabulate an unnormalised NumPy `log_density` at the midpoints of `num_cells` cells of [lower, upper].

    **Returns:** the sampler, whose `log_normalizer` is the midpoint-rule value of
    log ∫_lower^upper exp(log_density), and `expectation(g) = Σ_i p_i g(t_i)` for NumPy functions g,
    evaluated in float64 whatever JAX's default precision.
    """
    if not upper > lower:
        raise ValueError(f"`upper` must exceed `lower`, got lower={lower} and upper={upper}.")
    cell_width = (upper - lower) / num_cells
    midpoints = lower + cell_width * (np.arange(num_cells) + 0.5)
    log_values = np.asarray(log_density(midpoints), dtype=np.float64)
    largest = np.max(log_values)
    if not np.isfinite(largest):
        raise ValueError("`log_density` must be finite somewhere on the grid.")
    weights = np.exp(log_values - largest)
    total = np.sum(weights)
    probabilities = weights / total
    cumulative = np.cumsum(probabilities)
    cumulative[-1] = 1.0
    log_normalizer = float(largest + np.log(total * cell_width))
    table = TabulatedDensity(float(lower), float(cell_width), jnp.asarray(cumulative), log_normalizer)

    def expectation(function: Callable[[np.ndarray], np.ndarray]) -> float:
        return float(np.sum(probabilities * function(midpoints)))

    return table, expectation
