"""Bayesian timing model (Acerbi, Wolpert & Vijayakumar 2012), D = 5.

SVBMC benchmark §5.4 / appendix E.2.4. The likelihood follows the VSBQ benchmark task
`benchflow/tasks/timing.py` (acerbilab/vsbq), whose data and reference posterior are in
`vsbq/timing.mat`.
"""

from pathlib import Path
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from gpcompose._validation import check_point

_NUM_PARAMETERS = 5
# The observer's grid over intervals, and the response range of a lapse: [0, 2] s.
_INTERVAL_RANGE = 2.0
_NUM_INTERVAL_POINTS = 101
# The measurement grid: `_NUM_MEASUREMENT_POINTS` points over ±`_MEASUREMENT_HALF_WIDTH` SDs.
_NUM_MEASUREMENT_POINTS = 401
_MEASUREMENT_HALF_WIDTH = 5.0


def _trapezoid_weights(num_points, dtype):
    """Weights of the trapezoid rule on `num_points` unit-spaced points: (½, 1, …, 1, ½)."""
    weights = jnp.ones(num_points, dtype)
    return weights.at[0].set(0.5).at[-1].set(0.5)


def _normal_log_kernel(value, location, scale):
    """log N(value; location, scale²) without the constant −½ log 2π."""
    return -0.5 * ((value - location) / scale) ** 2 - jnp.log(scale)


class Timing(eqx.Module):
    """Posterior of the Bayesian time-perception observer, θ = (w_s, w_m, μ_p, σ_p, λ).

    On each trial a stimulus interval τ is drawn from `stimuli`, and the subject reproduces it
    (τ is the nominal interval of the trial's stimulus, as in the VSBQ task).

    - Measurement: t_s ~ N(τ, w_s²τ²).
    - Observer: combines the measurement likelihood N(t_s; s, (w_s s + ε)²) with a Gaussian prior
      N(s; μ_p, σ_p²), both on the grid s_i = 2i/100 s (i = 0…100), and takes the posterior mean
      s̄(t_s) = ∫ s p(s | t_s) ds / ∫ p(s | t_s) ds (trapezoid rule; ε = machine epsilon).
    - Response: the observer aims at ŝ = s̄/(1 + w_m²), the response that minimises the expected
      squared error under motor noise proportional to the aim, and produces t_m ~ N(ŝ, w_m²ŝ²).
      Responses are recorded in bins of width Δ, so
      P(r | t_s) = Φ((r + Δ/2 − ŝ)/(w_m ŝ)) − Φ((r − Δ/2 − ŝ)/(w_m ŝ)).
    - The measurement is integrated out by the trapezoid rule on 401 points over
      [max(0, τ − 5w_sτ), τ + 5w_sτ], with N(t_s; τ, w_s²τ²) renormalised on that grid.
    - Lapse: with probability λ the response is uniform on [0, 2] s, so
      p(r | τ) = (1 − λ) ∫ p(t_s | τ) P(r | t_s) dt_s + λΔ/2.
    - Prior: uniform on the box [`lower_bounds`, `upper_bounds`].

    These are the definitions of the VSBQ task `timing` (grids, ε, ŝ = s̄/(1 + w_m²), Δ = 0.02 s);
    `load_timing` builds the problem from `vsbq/timing.mat`. Trials with the same stimulus and
    response are grouped (`trial_counts`): the log likelihood Σ_trials log p(r | τ) is computed
    once per distinct pair.
    """

    dimension: ClassVar[int] = _NUM_PARAMETERS
    stimuli: Float[Array, " K"]
    stimulus_index: Int[Array, " P"]
    responses: Float[Array, " P"]
    trial_counts: Float[Array, " P"]
    bin_size: float = eqx.field(static=True)
    lower_bounds: Float[Array, " 5"]
    upper_bounds: Float[Array, " 5"]

    def __init__(
        self,
        stimuli: Float[ArrayLike, " K"],
        stimulus_index: Int[ArrayLike, " N"],
        responses: Float[ArrayLike, " N"],
        bin_size: float,
        lower_bounds: Float[ArrayLike, " 5"],
        upper_bounds: Float[ArrayLike, " 5"],
    ):
        """`stimulus_index` is 0-based into `stimuli`; one entry per trial (grouped here)."""
        stimulus_index, responses = np.asarray(stimulus_index), np.asarray(responses)
        if stimulus_index.ndim != 1 or responses.shape != stimulus_index.shape:
            raise ValueError(
                "`stimulus_index` and `responses` must be vectors of one shape, got "
                f"{stimulus_index.shape} and {responses.shape}."
            )
        pairs, counts = np.unique(np.stack([stimulus_index, responses], axis=1), axis=0, return_counts=True)
        self.stimuli = jnp.asarray(stimuli)
        self.stimulus_index = jnp.asarray(pairs[:, 0].astype(np.int32))
        self.responses = jnp.asarray(pairs[:, 1], self.stimuli.dtype)
        self.trial_counts = jnp.asarray(counts, self.stimuli.dtype)
        self.bin_size = float(bin_size)
        self.lower_bounds = jnp.asarray(lower_bounds)
        self.upper_bounds = jnp.asarray(upper_bounds)

    def __check_init__(self):
        if self.stimuli.ndim != 1:
            raise ValueError(f"`stimuli` must be a vector, got shape {self.stimuli.shape}.")
        for name, bound in (("lower_bounds", self.lower_bounds), ("upper_bounds", self.upper_bounds)):
            if bound.shape != (_NUM_PARAMETERS,):
                raise ValueError(f"`{name}` must have shape ({_NUM_PARAMETERS},), got {bound.shape}.")
        if not self.bin_size > 0:
            raise ValueError(f"`bin_size` must be positive, got {self.bin_size}.")

    def _aimed_responses(self, parameters):
        """Per stimulus: the measurement grid spacing, the normalised measurement density on the grid
        and the observer's aim ŝ(t_s) there; each of shape (K, 401) except the spacing (K,)."""
        measurement_weber, motor_weber, prior_mean, prior_sd = parameters[:4]
        dtype = self.stimuli.dtype
        unit = jnp.linspace(0.0, 1.0, _NUM_MEASUREMENT_POINTS, dtype=dtype)
        measurement_sd = measurement_weber * self.stimuli
        lower = jnp.maximum(0.0, self.stimuli - _MEASUREMENT_HALF_WIDTH * measurement_sd)
        upper = self.stimuli + _MEASUREMENT_HALF_WIDTH * measurement_sd
        measurements = lower[:, None] + (upper - lower)[:, None] * unit[None, :]
        spacing = (upper - lower) / (_NUM_MEASUREMENT_POINTS - 1)
        measurement_weights = _trapezoid_weights(_NUM_MEASUREMENT_POINTS, dtype)
        # N(t_s; τ, w_s²τ²) renormalised on the grid, so its constant factor drops out.
        density = jnp.exp(_normal_log_kernel(measurements, self.stimuli[:, None], measurement_sd[:, None]))
        density = density / (spacing * (density @ measurement_weights))[:, None]

        intervals = jnp.linspace(0.0, _INTERVAL_RANGE, _NUM_INTERVAL_POINTS, dtype=dtype)
        interval_weights = _trapezoid_weights(_NUM_INTERVAL_POINTS, dtype)
        likelihood_sd = measurement_weber * intervals + jnp.finfo(dtype).eps
        log_prior = _normal_log_kernel(intervals, prior_mean, prior_sd) - jnp.log(likelihood_sd)
        # log p(s_i | t_s) up to a constant, shape (K, 401, 101).
        log_posterior = (
            log_prior[None, None, :]
            - 0.5 * ((measurements[:, :, None] - intervals[None, None, :]) / likelihood_sd[None, None, :]) ** 2
        )
        posterior = (
            jnp.exp(log_posterior - jnp.max(log_posterior, axis=-1, keepdims=True)) * interval_weights[None, None, :]
        )
        posterior_mean = (posterior @ intervals) / jnp.sum(posterior, axis=-1)
        return spacing, density, posterior_mean / (1 + motor_weber**2)

    def log_likelihood(self, parameters: Float[ArrayLike, " 5"]) -> Float[Array, ""]:
        """Σ_trials log[(1 − λ) ∫ p(t_s | τ) P(r | t_s) dt_s + λΔ/2] for θ inside the bounds."""
        parameters = jnp.asarray(parameters)
        motor_weber, lapse = parameters[1], parameters[4]
        spacing, density, aim = self._aimed_responses(parameters)
        aim = aim[self.stimulus_index]
        motor_sd = motor_weber * aim
        half_bin = 0.5 * self.bin_size
        upper = (self.responses[:, None] + half_bin - aim) / motor_sd
        lower = (self.responses[:, None] - half_bin - aim) / motor_sd
        bin_probability = ndtr(upper) - ndtr(lower)
        measurement_weights = _trapezoid_weights(_NUM_MEASUREMENT_POINTS, aim.dtype)
        response_probability = spacing[self.stimulus_index] * (
            (density[self.stimulus_index] * bin_probability) @ measurement_weights
        )
        mixture = (1 - lapse) * response_probability + lapse * self.bin_size / _INTERVAL_RANGE
        return jnp.sum(self.trial_counts * jnp.log(mixture))

    def log_prior(self, parameters: Float[ArrayLike, " 5"]) -> Float[Array, ""]:
        """−Σ_d log(UB_d − LB_d) inside the box, −∞ outside."""
        parameters = jnp.asarray(parameters)
        inside = jnp.all((parameters >= self.lower_bounds) & (parameters <= self.upper_bounds))
        log_volume = jnp.sum(jnp.log(self.upper_bounds - self.lower_bounds))
        return jnp.where(inside, -log_volume, -jnp.inf)

    def log_density(self, parameters: Float[ArrayLike, " 5"]) -> Float[Array, ""]:
        """log p(θ) + log p(data | θ); −∞ outside the box."""
        parameters = check_point(parameters, "parameters", _NUM_PARAMETERS)
        log_prior = self.log_prior(parameters)
        inside = jnp.isfinite(log_prior)
        # Evaluate the likelihood at the box centre outside the bounds so that no NaN reaches the gradient.
        safe = jnp.where(inside, parameters, 0.5 * (self.lower_bounds + self.upper_bounds))
        return jnp.where(inside, log_prior + self.log_likelihood(safe), -jnp.inf)


class TimingReference(eqx.Module):
    """The reference posterior of the VSBQ task `timing` under the uniform box prior (`y.Post` in
    `vsbq/timing.mat`): log Z, moments, mode, and 1-D marginal densities on uniform grids.

    `marginal_grid[:, d]` spans `[lower, upper]` of `Post.MarginalBounds` in 8192 points, and
    `marginal_density[:, d]` integrates to 1 over it by the trapezoid rule.

    `benchmarks/reference_timing.py` checks `Timing` against these: the log density at the mode
    matches `ModeFval` to 2e-11, and adaptive importance sampling reproduces the mean (within
    0.05 posterior SDs), the SDs (within 5%) and the marginals (total variation < 0.02), but
    gives log Z = −3859.976 ± 0.003, 0.108 below `log_normalizer` (= `Post.lnZ`, whose
    estimator is not documented in the file): ΔLML against it carries that offset.
    """

    log_normalizer: Float[Array, ""]
    reference_mean: Float[Array, " 5"]
    reference_covariance: Float[Array, "5 5"]
    mode: Float[Array, " 5"]
    mode_log_density: Float[Array, ""]
    marginal_grid: Float[Array, "M 5"]
    marginal_density: Float[Array, "M 5"]

    @property
    def dimension(self) -> int:
        """The number of model parameters (5), read from the marginal grid."""
        return self.marginal_grid.shape[1]

    def marginal_samples(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "num_samples 5"]:
        """Independent draws of each coordinate from its reference marginal, by inverting the
        piecewise-linear CDF (trapezoid rule) of `marginal_density`. The marginals are right, so
        the draws serve `metrics.mmtv`; the coordinates are independent, unlike the posterior's,
        so moments for `metrics.gskl` must come from `reference_mean` and `reference_covariance`."""
        levels = jax.random.uniform(key, (num_samples, self.dimension), self.marginal_grid.dtype)

        def inverse_cdf(grid, density, level):
            cells = 0.5 * (density[1:] + density[:-1]) * jnp.diff(grid)
            cumulative = jnp.concatenate([jnp.zeros(1, grid.dtype), jnp.cumsum(cells)])
            return jnp.interp(level * cumulative[-1], cumulative, grid)

        return jax.vmap(inverse_cdf, in_axes=1, out_axes=1)(self.marginal_grid, self.marginal_density, levels)


def _load_timing_struct(data_dir):
    from scipy.io import loadmat  # SciPy is needed only to read the data (the `bench` extra).

    return loadmat(Path(data_dir) / "vsbq" / "timing.mat", squeeze_me=True, struct_as_record=False)["y"]


def load_timing(data_dir: str | Path) -> Timing:
    """The 1512 trials of `<data_dir>/vsbq/timing.mat` (1-based stimulus index in column 2 of
    `Data.X`, responses `Data.R`, stimuli `Data.S`, `Data.binsize`) with the hard bounds `LB`, `UB`.
    The other columns of `Data.X` are not used (column 0 holds intervals close to, not equal to,
    the nominal `Data.S`)."""
    struct = _load_timing_struct(data_dir)
    data = struct.Data
    return Timing(
        stimuli=np.asarray(data.S, dtype=float),
        stimulus_index=np.asarray(data.X[:, 2], dtype=int) - 1,
        responses=np.asarray(data.R, dtype=float),
        bin_size=float(data.binsize),
        lower_bounds=np.asarray(struct.LB, dtype=float),
        upper_bounds=np.asarray(struct.UB, dtype=float),
    )


def load_timing_reference(data_dir: str | Path) -> TimingReference:
    """`Post` of `<data_dir>/vsbq/timing.mat`: lnZ (−3859.868), Mean, Cov, Mode, ModeFval, and
    MarginalPdf on `linspace(MarginalBounds[0, d], MarginalBounds[1, d], 8192)`."""
    posterior = _load_timing_struct(data_dir).Post
    bounds = np.asarray(posterior.MarginalBounds, dtype=float)
    density = np.asarray(posterior.MarginalPdf, dtype=float).T
    grid = np.linspace(bounds[0], bounds[1], density.shape[0])
    return TimingReference(
        log_normalizer=jnp.asarray(float(posterior.lnZ)),
        reference_mean=jnp.asarray(np.asarray(posterior.Mean, dtype=float)),
        reference_covariance=jnp.asarray(np.asarray(posterior.Cov, dtype=float)),
        mode=jnp.asarray(np.asarray(posterior.Mode, dtype=float)),
        mode_log_density=jnp.asarray(float(posterior.ModeFval)),
        marginal_grid=jnp.asarray(grid),
        marginal_density=jnp.asarray(density),
    )
