"""The two-moons target of SVBMC (Li, Clarté, Acerbi 2023, §5.2 and App. E.2.2) and its VSBQ variant.

    f(x) = −½((r − r₀)/s)² + log(e^{κx₁/r}/3 + 2e^{−κx₁/r}/3),   r = ‖x‖₂,  r₀ = 1/√2,  x ∈ R²,

a ring of radius r₀ whose angle θ (x₁ = r cos θ) follows the von Mises mixture
⅓ vM(0, κ) + ⅔ vM(π, κ). The paper's variant has s = 0.01; the VSBQ code (`bimodal` task) has s = 0.1;
both use κ = 8 (the paper leaves κ unstated; the VSBQ code sets it). In polar coordinates dx = r dr dθ,
so the normaliser factorises:

    Z = ∫₀^{2π} (e^{κ cos θ}/3 + 2e^{−κ cos θ}/3) dθ · ∫₀^∞ r e^{−(r − r₀)²/(2s²)} dr
      = 2π I₀(κ) · [s² e^{−r₀²/(2s²)} + r₀ s √(2π) Φ(r₀/s)],

the radial integral in closed form (substitute r = r₀ + s t). This gives log Z = 6.165761171767828 for
s = 0.1 (the VSBQ value, to all digits) and log Z = 3.863176078773768 for s = 0.01; both agree with
adaptive quadrature of the two 1-D integrals to 1e-15.

Reference samples are exact up to the grids: θ by inverse CDF on 2¹⁶ cells of [−π, π], r independently
by inverse CDF on 2¹⁶ cells of [max(0, r₀ − 12s), r₀ + 12s].
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

_RING_RADIUS = 1.0 / math.sqrt(2.0)
_RADIAL_HALF_WIDTH_IN_SCALES = 12.0
_NUM_CELLS = 2**16
_LARGEST_CONCENTRATION = 700.0


def _log_angular_density(cosine, concentration, array_module):
    """log(e^{κ cos θ}/3 + 2e^{−κ cos θ}/3) as a log-sum-exp, with `array_module` NumPy or jax.numpy."""
    return array_module.logaddexp(concentration * cosine - math.log(3.0), -concentration * cosine + math.log(2.0 / 3.0))


def _log_radial_normaliser(radial_scale: float) -> float:
    """log ∫₀^∞ r e^{−(r − r₀)²/(2s²)} dr = log[s² e^{−r₀²/(2s²)} + r₀ s √(2π) Φ(r₀/s)]."""
    ratio = _RING_RADIUS / radial_scale
    standard_normal_cdf = 0.5 * math.erfc(-ratio / math.sqrt(2.0))
    integral = (
        radial_scale**2 * math.exp(-0.5 * ratio**2)
        + _RING_RADIUS * radial_scale * math.sqrt(2.0 * math.pi) * standard_normal_cdf
    )
    return math.log(integral)


class TwoMoons(eqx.Module):
    """The 2-D two-moons target with exact reference samples and moments.

    **Arguments:**
    - `radial_scale`: s, the standard deviation of the ring (0.01 in the paper; 0.1 in VSBQ).
    - `concentration`: κ of the von Mises angle, in (0, 700] so that I₀(κ) is finite in float64.

    Fields and methods: `dimension` (= 2), `log_density(x)` for one point of shape (2,),
    `log_normalizer` (closed form, module docstring), `reference_samples(key, num_samples)`,
    `reference_mean` and `reference_covariance` (midpoint sums over the angle and radius grids).
    """

    dimension: ClassVar[int] = 2
    radial_scale: float
    concentration: float
    log_normalizer: float
    angle_marginal: TabulatedDensity
    radius_marginal: TabulatedDensity
    reference_mean: Float[Array, " 2"]
    reference_covariance: Float[Array, "2 2"]

    def __init__(self, radial_scale: float = 0.01, concentration: float = 8.0):
        radial_scale, concentration = float(radial_scale), float(concentration)
        if not (math.isfinite(radial_scale) and radial_scale > 0.0):
            raise ValueError(f"`radial_scale` must be finite and positive, got {radial_scale}.")
        if not 0.0 < concentration <= _LARGEST_CONCENTRATION:
            raise ValueError(f"`concentration` must lie in (0, {_LARGEST_CONCENTRATION}], got {concentration}.")
        self.radial_scale = radial_scale
        self.concentration = concentration
        self.log_normalizer = math.log(2.0 * math.pi * float(np.i0(concentration))) + _log_radial_normaliser(
            radial_scale
        )
        self.angle_marginal, angle_expectation = tabulate(
            lambda angle: _log_angular_density(np.cos(angle), concentration, np),
            -math.pi,
            math.pi,
            _NUM_CELLS,
        )
        self.radius_marginal, radius_expectation = tabulate(
            lambda radius: np.log(radius) - 0.5 * ((radius - _RING_RADIUS) / radial_scale) ** 2,
            max(0.0, _RING_RADIUS - _RADIAL_HALF_WIDTH_IN_SCALES * radial_scale),
            _RING_RADIUS + _RADIAL_HALF_WIDTH_IN_SCALES * radial_scale,
            _NUM_CELLS,
        )
        # x = r (cos θ, sin θ) with r and θ independent.
        mean_radius = radius_expectation(lambda radius: radius)
        second_moment_radius = radius_expectation(lambda radius: radius**2)
        mean = mean_radius * np.array([angle_expectation(np.cos), angle_expectation(np.sin)])
        second_moment = second_moment_radius * np.array(
            [
                [
                    angle_expectation(lambda angle: np.cos(angle) ** 2),
                    angle_expectation(lambda angle: np.cos(angle) * np.sin(angle)),
                ],
                [
                    angle_expectation(lambda angle: np.cos(angle) * np.sin(angle)),
                    angle_expectation(lambda angle: np.sin(angle) ** 2),
                ],
            ]
        )
        self.reference_mean = jnp.asarray(mean)
        self.reference_covariance = jnp.asarray(second_moment - np.outer(mean, mean))

    def log_density(self, x: Float[ArrayLike, " 2"]) -> Float[Array, ""]:
        """f(x) of the module docstring for one point; at x = 0 (r = 0) the angular term uses cos θ := 0."""
        x = check_point(x, "x", self.dimension)
        squared_radius = jnp.sum(x**2)
        is_away_from_origin = squared_radius > 0.0
        # Double `where` keeps the value and the gradient finite at the origin.
        safe_radius = jnp.sqrt(jnp.where(is_away_from_origin, squared_radius, 1.0))
        radius = jnp.where(is_away_from_origin, safe_radius, 0.0)
        cosine = x[0] / safe_radius
        radial = -0.5 * ((radius - _RING_RADIUS) / self.radial_scale) ** 2
        return radial + _log_angular_density(cosine, self.concentration, jnp)

    @eqx.filter_jit
    def reference_samples(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "num_samples 2"]:
        """Exact draws x = r (cos θ, sin θ), θ and r independent, each by grid inverse CDF."""
        angle_key, radius_key = jax.random.split(key)
        angle = self.angle_marginal.sample(angle_key, (num_samples,))
        radius = self.radius_marginal.sample(radius_key, (num_samples,))
        return radius[:, None] * jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=1)
