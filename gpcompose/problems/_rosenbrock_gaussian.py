"""The multivariate Rosenbrock–Gaussian target of SVBMC (Li, Clarté, Acerbi 2023, §5.1 and App. E.2.1).

    log p(x) = R(x₁, x₂) + R(x₃, x₄) + log N(x₅, x₆; 0, I) + log N(x; 0, 3² I),   x ∈ R⁶,
    R(a, b) = −(a² − b)² − (b − 1)²/100

(the paper's convention, with normalised Gaussian factors; the authors' VSBQ code uses
(a − 1)²/100 and an unnormalised N(x₅, x₆) factor instead). The density factorises into
three independent pairs:

- (x₅, x₆): N(0, I)·N(0, 9I) ∝ N(0, 0.9 I), contributing ∫ N(x; 0, I) N(x; 0, 9I) dx = 1/(20π).
- (x₁, x₂) and (x₃, x₄), each with the unnormalised density
  g(a, b) = exp(R(a, b)) N(a; 0, 9) N(b; 0, 9). As a function of b its logarithm is quadratic,
  −½λb² + η(a)b + c(a) with λ = 2 + 1/50 + 1/9, η(a) = 2a² + 1/50,
  c(a) = −a⁴ − 1/100 − a²/18 − log(18π), so that exactly
      b | a ~ N(η(a)/λ, 1/λ),   log g(a) = c(a) + η(a)²/(2λ) + ½ log(2π/λ).
  The marginal g(a) decays like exp(−(1 − 2/λ)a⁴) with 1 − 2/λ ≈ 0.06.

Hence log Z = 2 log ∫ g(a) da − log(20π), evaluated by adaptive quadrature of g(a) (and checked
against a double integral of g(a, b)) and stored as `RosenbrockGaussian.log_normalizer`.
Reference samples are exact up to the grid of a: a by inverse CDF on 2¹⁶ cells of [−8, 8]
(log g(±8) − max log g < −250), then b from its Gaussian conditional.
"""

import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_point
from ._tabulated_density import TabulatedDensity, tabulate

_CONDITIONAL_PRECISION = 2.0 + 1.0 / 50.0 + 1.0 / 9.0
_GAUSSIAN_PAIR_VARIANCE = 0.9
_GRID_HALF_WIDTH = 8.0
_NUM_CELLS = 2**16


def _rosenbrock(a, b):
    """R(a, b) = −(a² − b)² − (b − 1)²/100."""
    return -((a**2 - b) ** 2) - (b - 1.0) ** 2 / 100.0


def _conditional_mean_of_second(a):
    """E[b | a] = η(a)/λ with η(a) = 2a² + 1/50."""
    return (2.0 * a**2 + 1.0 / 50.0) / _CONDITIONAL_PRECISION


def _log_marginal_of_first(a: np.ndarray) -> np.ndarray:
    """log ∫ exp(R(a, b)) N(a; 0, 9) N(b; 0, 9) db = c(a) + η(a)²/(2λ) + ½ log(2π/λ)."""
    shift = 2.0 * a**2 + 1.0 / 50.0
    constant = -(a**4) - 1.0 / 100.0 - a**2 / 18.0 - np.log(18.0 * np.pi)
    return constant + shift**2 / (2.0 * _CONDITIONAL_PRECISION) + 0.5 * np.log(2.0 * np.pi / _CONDITIONAL_PRECISION)


class RosenbrockGaussian(eqx.Module):
    """The 6-D Rosenbrock–Gaussian target of Li, Clarté & Acerbi (2023, §5.1), with exact reference samples and moments.

    - `log_density(x)`: the normalised-factor log density of one point x of shape (6,).
    - `log_normalizer`: log ∫ exp(log_density), from the quadrature above.
    - `reference_samples(key, num_samples)`: independent draws, shape (num_samples, 6).
    - `reference_mean`, `reference_covariance`: moments from the same grid (midpoint sums).
    """

    dimension: ClassVar[int] = 6
    log_normalizer: ClassVar[float] = -8.662665903873
    first_coordinate_marginal: TabulatedDensity
    reference_mean: Float[Array, " 6"]
    reference_covariance: Float[Array, "6 6"]

    def __init__(self):
        marginal, expectation = tabulate(_log_marginal_of_first, -_GRID_HALF_WIDTH, _GRID_HALF_WIDTH, _NUM_CELLS)
        # Pair moments: (a, b) with b = η(a)/λ + ε, ε ~ N(0, 1/λ) independent of a.
        mean_first = expectation(lambda a: a)
        mean_second = expectation(_conditional_mean_of_second)
        variance_first = expectation(lambda a: (a - mean_first) ** 2)
        covariance_pair = expectation(lambda a: (a - mean_first) * (_conditional_mean_of_second(a) - mean_second))
        variance_second = (
            expectation(lambda a: (_conditional_mean_of_second(a) - mean_second) ** 2) + 1.0 / _CONDITIONAL_PRECISION
        )
        pair_covariance = np.array([[variance_first, covariance_pair], [covariance_pair, variance_second]])
        covariance = np.zeros((6, 6))
        covariance[0:2, 0:2] = pair_covariance
        covariance[2:4, 2:4] = pair_covariance
        covariance[4:6, 4:6] = _GAUSSIAN_PAIR_VARIANCE * np.eye(2)
        mean = np.array([mean_first, mean_second, mean_first, mean_second, 0.0, 0.0])
        self.first_coordinate_marginal = marginal
        self.reference_mean = jnp.asarray(mean)
        self.reference_covariance = jnp.asarray(covariance)

    def log_density(self, x: Float[ArrayLike, " 6"]) -> Float[Array, ""]:
        """R(x₁, x₂) + R(x₃, x₄) + log N(x₅, x₆; 0, I) + log N(x; 0, 9I), for one point."""
        x = check_point(x, "x", self.dimension)
        rosenbrock = _rosenbrock(x[0], x[1]) + _rosenbrock(x[2], x[3])
        standard_normal = -0.5 * (x[4] ** 2 + x[5] ** 2) - math.log(2.0 * math.pi)
        wide_normal = -0.5 * jnp.sum(x**2) / 9.0 - 3.0 * math.log(2.0 * math.pi * 9.0)
        return rosenbrock + standard_normal + wide_normal

    @eqx.filter_jit
    def reference_samples(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "num_samples 6"]:
        """Exact draws: each Rosenbrock pair as a ~ g(a) (grid inverse CDF), b | a ~ N(η(a)/λ, 1/λ);
        (x₅, x₆) ~ N(0, 0.9 I)."""
        first_key, noise_key, gaussian_key = jax.random.split(key, 3)
        first = self.first_coordinate_marginal.sample(first_key, (num_samples, 2))
        noise = jax.random.normal(noise_key, (num_samples, 2), first.dtype)
        second = _conditional_mean_of_second(first) + noise / math.sqrt(_CONDITIONAL_PRECISION)
        gaussian = math.sqrt(_GAUSSIAN_PAIR_VARIANCE) * jax.random.normal(gaussian_key, (num_samples, 2), first.dtype)
        return jnp.stack([first[:, 0], second[:, 0], first[:, 1], second[:, 1], gaussian[:, 0], gaussian[:, 1]], axis=1)
