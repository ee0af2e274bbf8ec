"""Lotka–Volterra predator–prey posterior on the Hudson's Bay hare and lynx pelts (D = 8).

SVBMC benchmark §5.3 / appendix E.2.3, with the model of the Stan case study "Predator-prey
population dynamics" (Carpenter 2018, `knitr/lotka-volterra` in stan-dev/example-models).
"""

from pathlib import Path
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from gpcompose._validation import check_point

_NUM_PARAMETERS = 8
_LOG_TWO_PI = float(np.log(2 * np.pi))

# Priors of the Stan case study, as (location, scale) pairs; the scales are standard deviations.
_RATE_PRIOR = (1.0, 0.5)  # α, γ ~ N(1, 0.5²) on (0, ∞)
_INTERACTION_PRIOR = (0.05, 0.05)  # β, δ ~ N(0.05, 0.05²) on (0, ∞)
_INITIAL_POPULATION_PRIOR = (float(np.log(10.0)), 1.0)  # u(0), v(0) ~ LogNormal(log 10, 1)
_NOISE_PRIOR = (-1.0, 1.0)  # σ_u, σ_v ~ LogNormal(−1, 1)


def _normal_log_density(value, location, scale):
    """log N(value; location, scale²)."""
    return -0.5 * ((value - location) / scale) ** 2 - jnp.log(scale) - 0.5 * _LOG_TWO_PI


def _positive_normal_log_density(value, location, scale):
    """log N(value; location, scale²) − log Φ(location/scale): the normal truncated to (0, ∞)."""
    return _normal_log_density(value, location, scale) - log_ndtr(location / scale)


def _log_normal_log_density(value, location, scale):
    """log LogNormal(value; location, scale) = log N(log value; location, scale²) − log value."""
    log_value = jnp.log(value)
    return _normal_log_density(log_value, location, scale) - log_value


def _log_space_vector_field(log_state, rates):
    """d/dt (log u, log v) = (α − βv, −γ + δu): the Lotka–Volterra equations for log populations."""
    alpha, beta, gamma, delta = rates
    prey, predator = jnp.exp(log_state[0]), jnp.exp(log_state[1])
    return jnp.stack([alpha - beta * predator, -gamma + delta * prey])


def _runge_kutta_step(log_state, rates, step_size):
    """One classical fourth-order Runge–Kutta step."""
    k1 = _log_space_vector_field(log_state, rates)
    k2 = _log_space_vector_field(log_state + 0.5 * step_size * k1, rates)
    k3 = _log_space_vector_field(log_state + 0.5 * step_size * k2, rates)
    k4 = _log_space_vector_field(log_state + step_size * k3, rates)
    return log_state + step_size / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class LotkaVolterra(eqx.Module):
    """Posterior of the Lotka–Volterra model of hare (prey u) and lynx (predator v) populations.

    Parameters x = (α, β, γ, δ, u(0), v(0), σ_u, σ_v), all positive; D = 8.

    - Dynamics: du/dt = αu − βuv, dv/dt = −γv + δuv, from u(0), v(0) at `years[0]`.
    - Observations: log hare_t ~ N(log u(t), σ_u²) and log lynx_t ~ N(log v(t), σ_v²) at every
      year, the first included (an observation of the initial state), i.e. LogNormal noise:
      log p(y | z, σ) = −log y − log σ − ½ log 2π − (log y − log z)²/(2σ²).
    - Priors (Stan case study; scales are standard deviations): α, γ ~ N(1, 0.5²) and
      β, δ ~ N(0.05, 0.05²), each truncated to (0, ∞) and renormalised (÷ Φ(2) and ÷ Φ(1));
      u(0), v(0) ~ LogNormal(log 10, 1); σ_u, σ_v ~ LogNormal(−1, 1). The prior is a proper
      density, so the evidence log Z = log ∫ p(x) p(data | x) dx is well defined. Stan's `~`
      statements leave the truncated normals unrenormalised; that convention has log Z lower
      by 2 log Φ(2) + 2 log Φ(1) ≈ −0.3918 and the same posterior.
    - Solver: the ODE for (log u, log v) (positive populations by construction) is integrated
      with `num_substeps` classical RK4 steps between consecutive observation years. The
      default of 50 steps a year agrees with a tight-tolerance adaptive solver (DOP853) to
      6e-9 relative at the posterior mode and 4e-8 at the prior centre over the 20 years
      (`tests/test_benchmark_models.py` checks 1e-6).

    The bounds are 0 and +∞ in every coordinate. `log_density` is −∞ outside them, and also
    where the ODE solution overflows (explosive parameters far out in the prior's tails; the
    gradient is not finite there).
    """

    dimension: ClassVar[int] = _NUM_PARAMETERS
    years: Float[Array, " T"] = eqx.field(converter=jnp.asarray)
    lynx: Float[Array, " T"] = eqx.field(converter=jnp.asarray)
    hare: Float[Array, " T"] = eqx.field(converter=jnp.asarray)
    num_substeps: int = eqx.field(static=True, default=50)

    def __check_init__(self):
        shape = self.years.shape
        if len(shape) != 1 or shape[0] < 2:
            raise ValueError(f"`years` must be a vector of at least 2 observation times, got shape {shape}.")
        for name, array in (("lynx", self.lynx), ("hare", self.hare)):
            if array.shape != shape:
                raise ValueError(f"`{name}` must have the shape of `years` {shape}, got {array.shape}.")
        if self.num_substeps < 1:
            raise ValueError(f"`num_substeps` must be at least 1, got {self.num_substeps}.")

    @property
    def lower_bounds(self) -> Float[Array, " 8"]:
        """Lower bounds of the 8 parameters: 0 (all are positive)."""
        return jnp.zeros(_NUM_PARAMETERS, self.years.dtype)

    @property
    def upper_bounds(self) -> Float[Array, " 8"]:
        """Upper bounds of the 8 parameters: +∞ (no upper bound)."""
        return jnp.full(_NUM_PARAMETERS, jnp.inf, self.years.dtype)

    def log_populations(self, parameters: Float[ArrayLike, " 8"]) -> Float[Array, "T 2"]:
        """(log u(t), log v(t)) at every observation year, by RK4 on the log-space ODE."""
        parameters = jnp.asarray(parameters)
        rates = parameters[:4]
        initial = jnp.log(parameters[4:6])
        intervals = jnp.diff(self.years)

        def advance(log_state, interval):
            step_size = interval / self.num_substeps

            def substep(state, _):
                return _runge_kutta_step(state, rates, step_size), None

            log_state, _ = jax.lax.scan(substep, log_state, None, length=self.num_substeps)
            return log_state, log_state

        _, path = jax.lax.scan(advance, initial, intervals)
        return jnp.concatenate([initial[None], path])

    def log_prior(self, parameters: Float[ArrayLike, " 8"]) -> Float[Array, ""]:
        """Log prior density at strictly positive `parameters` (normalised)."""
        parameters = jnp.asarray(parameters)
        rates = parameters[jnp.array([0, 2])]
        interactions = parameters[jnp.array([1, 3])]
        return (
            jnp.sum(_positive_normal_log_density(rates, *_RATE_PRIOR))
            + jnp.sum(_positive_normal_log_density(interactions, *_INTERACTION_PRIOR))
            + jnp.sum(_log_normal_log_density(parameters[4:6], *_INITIAL_POPULATION_PRIOR))
            + jnp.sum(_log_normal_log_density(parameters[6:8], *_NOISE_PRIOR))
        )

    def log_likelihood(self, parameters: Float[ArrayLike, " 8"]) -> Float[Array, ""]:
        """Σ_t log LogNormal(hare_t; log u(t), σ_u) + log LogNormal(lynx_t; log v(t), σ_v)."""
        parameters = jnp.asarray(parameters)
        log_populations = self.log_populations(parameters)
        observations = jnp.stack([self.hare, self.lynx], axis=1)
        return jnp.sum(_log_normal_log_density(observations, log_populations, parameters[None, 6:8]))

    def log_density(self, parameters: Float[ArrayLike, " 8"]) -> Float[Array, ""]:
        """log p(x) + log p(data | x) in the original space; −∞ outside (0, ∞)⁸."""
        parameters = check_point(parameters, "parameters", _NUM_PARAMETERS)
        inside = jnp.all(parameters > 0)
        # Evaluate at a harmless point outside the bounds so that no NaN reaches the gradient.
        safe = jnp.where(inside, parameters, jnp.ones_like(parameters))
        value = self.log_prior(safe) + self.log_likelihood(safe)
        return jnp.where(inside & jnp.isfinite(value), value, -jnp.inf)


def load_lotka_volterra(data_dir: str | Path, num_substeps: int = 50) -> LotkaVolterra:
    """The 21 yearly Hudson's Bay pelt counts 1900–1920 (thousands) from
    `<data_dir>/lotka_volterra/hudson_bay.csv` (columns year, lynx, hare), with time measured
    in years since 1900."""
    table = np.loadtxt(Path(data_dir) / "lotka_volterra" / "hudson_bay.csv", delimiter=",", skiprows=1, ndmin=2)
    years, lynx, hare = table.T
    return LotkaVolterra(years - years[0], lynx, hare, num_substeps=num_substeps)


class LotkaVolterraReference(eqx.Module):
    """Ground truth for the Lotka–Volterra posterior, written by
    `benchmarks/reference_lotka_volterra.py`: thinned NUTS samples and an importance-sampling
    estimate of log Z (multivariate-t proposal fitted to the samples) with its Monte Carlo
    standard error. `reference_mean` and `reference_covariance` are the sample moments."""

    samples: Float[Array, "N 8"]
    log_normalizer: Float[Array, ""]
    log_normalizer_standard_error: Float[Array, ""]

    @property
    def reference_mean(self) -> Float[Array, " 8"]:
        """The sample mean of the reference posterior draws."""
        return jnp.mean(self.samples, axis=0)

    @property
    def reference_covariance(self) -> Float[Array, "8 8"]:
        """The sample covariance of the reference posterior draws (unbiased, N − 1)."""
        return jnp.cov(self.samples, rowvar=False)

    def reference_samples(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "num_samples 8"]:
        """`num_samples` of the stored samples, drawn without replacement (so at most N)."""
        if num_samples > self.samples.shape[0]:
            raise ValueError(f"`num_samples` must be at most {self.samples.shape[0]}, got {num_samples}.")
        index = jax.random.choice(key, self.samples.shape[0], (num_samples,), replace=False)
        return self.samples[index]


def load_lotka_volterra_reference(path: str | Path) -> LotkaVolterraReference:
    """Read the `.npz` file (arrays `samples`, `log_normaliser`, `log_normaliser_standard_error`)."""
    with np.load(Path(path)) as archive:
        return LotkaVolterraReference(
            samples=jnp.asarray(archive["samples"]),
            log_normalizer=jnp.asarray(archive["log_normaliser"]),
            log_normalizer_standard_error=jnp.asarray(archive["log_normaliser_standard_error"]),
        )
