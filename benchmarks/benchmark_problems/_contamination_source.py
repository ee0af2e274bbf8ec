"""Contamination source: a 4-D inverse problem for the heat equation (Naiff 2019, BVBMC thesis §7.3,
Table 7.2).

A pollutant with source q(x, t) = q₀ exp(−(x − x₀)²/(2ρ²)) 1[t ≤ t_s] spreads on x ∈ [0, 1] by

    u_t = u_xx + q(x, t),   u(x, 0) = 0,   u_x(0, t) = u_x(1, t) = 0 (Neumann),

and u is observed at both ends, x ∈ {0, 1}, at t ∈ {0.075, 0.15, 0.225, 0.3, 0.4} (10 data). The
parameters θ = (x₀, t_s, q₀, ρ) are inferred from noisy observations û = u + ε.

- Likelihood: ε ~ N(0, σ²) with σ² ~ InvGamma(α, β) integrated out for each datum gives
  Π T(û; u, scale² = β/α, ν = 2α), α = β = 10⁻² (the thesis's code; ν = 0.02, a very heavy tail).
- Priors: x₀ ~ U(0, 1), t_s ~ U(0, 0.4), q₀ ~ HalfCauchy(10), ρ ~ HalfCauchy(0.1) (normalised).
- Warping (§7.3, eq. 7.12): x₀ = sigmoid(z₁), t_s = 0.4 sigmoid(z₂), q₀ = e^{z₃}, ρ = e^{z₄}; the
  density of z adds log |dθ/dz| = log σ(z₁) + log σ(−z₁) + log 0.4 + log σ(z₂) + log σ(−z₂) + z₃ + z₄.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from gpcompose._validation import check_point
from gpcompose.likelihoods import StudentT

_NUM_PARAMETERS = 4
OBSERVATION_TIMES = (0.075, 0.15, 0.225, 0.3, 0.4)
TRUE_PARAMETERS = (0.23, 0.3, 20.0 / math.pi, 0.05)
"""(x₀, t_s, q₀, ρ) from which the synthetic observations of Naiff (2019, §7.3) are simulated
(q₀ = 20/π in the thesis's code)."""
_SOURCE_TIME_RANGE = 0.4  # t_s ~ U(0, 0.4)
_SOURCE_STRENGTH_SCALE = 10.0  # q₀ ~ HalfCauchy(10)
_SOURCE_WIDTH_SCALE = 0.1  # ρ ~ HalfCauchy(0.1)
_NOISE_SD = 0.1
_DEFAULT_DATA_SEED = 100


def _implicit_euler_inverse(num_cells: int, time_step: float) -> np.ndarray:
    """(I − Δt A)⁻¹ for the ghost-node Neumann Laplacian A on `num_cells` + 1 nodes (float64)."""
    ratio = time_step * num_cells**2
    matrix = (1 + 2 * ratio) * np.eye(num_cells + 1)
    matrix -= ratio * (np.eye(num_cells + 1, k=1) + np.eye(num_cells + 1, k=-1))
    matrix[0, 1] = matrix[-1, -2] = -2 * ratio
    return np.linalg.inv(matrix)


def heat_observations(
    parameters: Float[ArrayLike, " 4"], num_cells: int = 100, time_step: float = 1e-3
) -> Float[Array, "5 2"]:
    """u(x, t) at x ∈ {0, 1} (columns) and the 5 observation times (rows) for θ = (x₀, t_s, q₀, ρ).

    Finite differences on the `num_cells` + 1 nodes x_i = i/`num_cells` (`num_cells` intervals of
    width h), the Neumann conditions by ghost nodes u₋₁ = u₁ and u_{N+1} = u_{N−1}, and implicit
    Euler with step Δt = `time_step`:

        (I − Δt A) uⁿ⁺¹ = uⁿ + Δt fₙ s,   (A u)_i = (u_{i−1} − 2u_i + u_{i+1})/h²,

    with s_i = q₀ exp(−(x_i − x₀)²/(2ρ²)) and fₙ = clip((t_s − nΔt)/Δt, 0, 1), the fraction of the
    step [nΔt, (n + 1)Δt] during which the source is on (the step average of 1[t ≤ t_s]), so that
    u is continuous and piecewise smooth in t_s. The matrix I − Δt A is the same at every step, so
    it is inverted once (in NumPy, float64, at trace time; it is diagonally dominant with condition
    number below 1 + 4Δt/h²) and each step of the `lax.scan` is one matrix–vector product, three
    times faster on a CPU than a `lax.linalg.tridiagonal_solve` per step. The trapezoid-rule mass
    h(½u₀ + u₁ + … + ½u_N) is conserved by A exactly, so it grows by Δt fₙ times the trapezoid mass
    of s at each step. The observation times must be multiples of `time_step`.
    """
    parameters = jnp.asarray(parameters)
    dtype = parameters.dtype
    steps_per_observation = np.asarray(OBSERVATION_TIMES) / time_step
    observation_steps = np.round(steps_per_observation).astype(int)
    if num_cells < 2 or not np.allclose(steps_per_observation, observation_steps, rtol=0, atol=1e-6):
        raise ValueError(
            f"`num_cells` must be ≥ 2 and the observation times {OBSERVATION_TIMES} multiples of `time_step`; "
            f"got num_cells={num_cells}, time_step={time_step}."
        )
    x0, source_end, strength, width = parameters
    nodes = jnp.linspace(0.0, 1.0, num_cells + 1, dtype=dtype)
    source = strength * jnp.exp(-0.5 * ((nodes - x0) / width) ** 2)
    step_inverse = jnp.asarray(_implicit_euler_inverse(num_cells, time_step), dtype)
    start_times = time_step * jnp.arange(observation_steps[-1], dtype=dtype)
    fractions = jnp.clip((source_end - start_times) / time_step, 0.0, 1.0)

    def advance(state, fraction):
        right = state + time_step * fraction * source
        state = step_inverse @ right
        return state, state[jnp.array([0, num_cells])]

    _, ends = jax.lax.scan(advance, jnp.zeros(num_cells + 1, dtype), fractions)
    return ends[observation_steps - 1]


def simulate_observations(
    key: PRNGKeyArray,
    parameters: Float[ArrayLike, " 4"] = TRUE_PARAMETERS,
    noise_sd: float = _NOISE_SD,
    num_cells: int = 100,
    time_step: float = 1e-3,
) -> Float[Array, "5 2"]:
    """Synthetic data û = u(θ) + ε, ε ~ N(0, `noise_sd`²) i.i.d., as the thesis's code makes them
    (its noise comes from Julia's random-number generator, so no JAX key reproduces its numbers)."""
    parameters = jnp.asarray(parameters, dtype=float)
    clean = heat_observations(parameters, num_cells, time_step)
    return clean + noise_sd * jax.random.normal(key, clean.shape, clean.dtype)


def _log_sigmoid_derivative(z):
    """log σ′(z) = log σ(z) + log σ(−z)."""
    return jax.nn.log_sigmoid(z) + jax.nn.log_sigmoid(-z)


def _half_cauchy_log_density(value, scale):
    """log HalfCauchy(value; scale) = log(2/(π scale)) − log(1 + (value/scale)²) for value > 0."""
    return math.log(2 / (math.pi * scale)) - jnp.log1p((value / scale) ** 2)


class ContaminationSource(eqx.Module):
    """Posterior of the contamination source θ = (x₀, t_s, q₀, ρ) (module docstring), in the
    unconstrained space z ∈ ℝ⁴ of the warping θ = `to_constrained(z)`.

    `observations` (5 times × x ∈ {0, 1}) default to `simulate_observations` with the true
    θ = (0.23, 0.3, 20/π, 0.05), noise sd 0.1 and the key `jax.random.key(100)`. The solver
    is `heat_observations` with `num_cells` intervals and `time_step` (defaults 100 and 10⁻³,
    the thesis's code). The Student-t likelihood has α = β = `noise_shape` = `noise_rate`.
    `log_density(z)` is log p(θ(z)) + log p(û | θ(z)) + log |dθ/dz|, a normalised prior times
    the likelihood, so log ∫ exp(log_density) dz is the evidence.
    """

    observations: Float[Array, "5 2"]
    num_cells: int = eqx.field(static=True)
    time_step: float = eqx.field(static=True)
    noise_shape: float = eqx.field(static=True)
    noise_rate: float = eqx.field(static=True)

    def __init__(
        self,
        observations: Float[ArrayLike, "5 2"] | None = None,
        *,
        num_cells: int = 100,
        time_step: float = 1e-3,
        noise_shape: float = 1e-2,
        noise_rate: float = 1e-2,
    ):
        if observations is None:
            observations = simulate_observations(
                jax.random.key(_DEFAULT_DATA_SEED), num_cells=num_cells, time_step=time_step
            )
        self.observations = jnp.asarray(observations)
        self.num_cells = num_cells
        self.time_step = time_step
        self.noise_shape = noise_shape
        self.noise_rate = noise_rate

    def __check_init__(self):
        shape = (len(OBSERVATION_TIMES), 2)
        if self.observations.shape != shape:
            raise ValueError(f"`observations` must have shape {shape}, got {self.observations.shape}.")
        if not (self.noise_shape > 0 and self.noise_rate > 0):
            raise ValueError(
                f"`noise_shape` and `noise_rate` must be positive, got {self.noise_shape}, {self.noise_rate}."
            )

    @property
    def dimension(self) -> int:
        """The number of model parameters, 4: θ = (x₀, t_s, q₀, ρ) (thesis §7.3)."""
        return _NUM_PARAMETERS

    @staticmethod
    def to_constrained(z: Float[ArrayLike, "*batch 4"]) -> Float[Array, "*batch 4"]:
        """θ = (sigmoid(z₁), 0.4 sigmoid(z₂), e^{z₃}, e^{z₄}), over the last axis."""
        z = jnp.asarray(z)
        return jnp.stack(
            [
                jax.nn.sigmoid(z[..., 0]),
                _SOURCE_TIME_RANGE * jax.nn.sigmoid(z[..., 1]),
                jnp.exp(z[..., 2]),
                jnp.exp(z[..., 3]),
            ],
            axis=-1,
        )

    @staticmethod
    def to_unconstrained(parameters: Float[ArrayLike, "*batch 4"]) -> Float[Array, "*batch 4"]:
        """The inverse of `to_constrained`: (logit x₀, logit(t_s/0.4), log q₀, log ρ)."""
        parameters = jnp.asarray(parameters)
        return jnp.stack(
            [
                jax.scipy.special.logit(parameters[..., 0]),
                jax.scipy.special.logit(parameters[..., 1] / _SOURCE_TIME_RANGE),
                jnp.log(parameters[..., 2]),
                jnp.log(parameters[..., 3]),
            ],
            axis=-1,
        )

    @staticmethod
    def log_jacobian(z: Float[ArrayLike, " 4"]) -> Float[Array, ""]:
        """log |det dθ/dz| of `to_constrained` (eq. 7.12)."""
        z = jnp.asarray(z)
        return (
            _log_sigmoid_derivative(z[0]) + _log_sigmoid_derivative(z[1]) + math.log(_SOURCE_TIME_RANGE) + z[2] + z[3]
        )

    @staticmethod
    def log_prior(parameters: Float[ArrayLike, " 4"]) -> Float[Array, ""]:
        """log U(x₀; 0, 1) + log U(t_s; 0, 0.4) + log HalfCauchy(q₀; 10) + log HalfCauchy(ρ; 0.1),
        for θ inside the support (not checked)."""
        parameters = jnp.asarray(parameters)
        return (
            -math.log(_SOURCE_TIME_RANGE)
            + _half_cauchy_log_density(parameters[2], _SOURCE_STRENGTH_SCALE)
            + _half_cauchy_log_density(parameters[3], _SOURCE_WIDTH_SCALE)
        )

    @staticmethod
    def sample_prior(key: PRNGKeyArray, num_samples: int) -> Float[Array, "num_samples 4"]:
        """`num_samples` draws of θ from the prior (a half-Cauchy as |Cauchy|)."""
        uniform_key, cauchy_key = jax.random.split(key)
        uniform = jax.random.uniform(uniform_key, (num_samples, 2)) * jnp.array([[1.0, _SOURCE_TIME_RANGE]])
        scales = jnp.array([[_SOURCE_STRENGTH_SCALE, _SOURCE_WIDTH_SCALE]])
        half_cauchy = scales * jnp.abs(jax.random.cauchy(cauchy_key, (num_samples, 2)))
        return jnp.concatenate([uniform, half_cauchy], axis=1)

    def log_likelihood(self, parameters: Float[ArrayLike, " 4"]) -> Float[Array, ""]:
        """Σ log T(û; u(θ), scale² = β/α, ν = 2α) over the 10 observations
        (`gpcompose.likelihoods.StudentT`)."""
        predicted = heat_observations(jnp.asarray(parameters), self.num_cells, self.time_step)
        likelihood = StudentT(2 * self.noise_shape, math.sqrt(self.noise_rate / self.noise_shape))
        return jnp.sum(likelihood.log_prob(self.observations, predicted))

    def log_density(self, z: Float[ArrayLike, " 4"]) -> Float[Array, ""]:
        """log p(θ) + log p(û | θ) + log |dθ/dz| at θ = `to_constrained(z)`."""
        z = check_point(z, "z", _NUM_PARAMETERS)
        parameters = self.to_constrained(z)
        return self.log_prior(parameters) + self.log_likelihood(parameters) + self.log_jacobian(z)
