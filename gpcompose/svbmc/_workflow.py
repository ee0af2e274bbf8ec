"""SVBMC as an active learner (`SVBMC`: `init`/`ask`/`tell`/`result` on fixed-capacity
buffers), its result, and `fit`, the black-box run from existing evaluations."""

import math
import warnings
from collections.abc import Callable
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .. import sparse
from .._jit import public_jit
from .._validation import as_floating, check_key
from ..acquisition import maximize_from_candidates
from ..active_learning import (
    AbstractActiveLearner,
    Checkpoint,
    Evaluations,
    Progress,
    buffer_rows,
    repeats_failure,
    require_single_run,
    run_black_box,
)
from ..transforms import BoundedTransform, TransformedMixture, WhitenedTransform
from ._acquisitions import IMIQR, AbstractSVBMCAcquisition, ProspectiveUncertainty
from ._report import history_capacity, record_round, reported_slot, resize_history, start_history
from ._schedule import AbstractRefitSchedule, DoublingRounds
from ._state import SVBMCState
from ._surrogate import Surrogate
from ._training import Previous, new_point_value_and_noise, retrain, training_rows
from ._whitening import fit_and_whiten


class SVBMCResult(eqx.Module):
    """Outcome of an SVBMC run.

    - `posterior`: the variational posterior in the original space — a `VBMCMixture`
      when no coordinate is bounded (with whitening on, the image of the fitted mixture
      under w ↦ m + L w, in the rotated family), else its push-forward
      `TransformedMixture`; both have `.sample(key, n)` and `.log_prob(x)`.
    - `elbo`, `elbo_sd`: the ELBO (estimate of log Z) and its Bayesian-quadrature sd.
    - `reported_evaluations`: the evaluations after `init` of the round whose mixture and
      ELBO these are: the last round's, unless its BQ sd exceeds `report_sd_tolerance`
      (then the recent round with the highest ELBO − `report_safe_sd`·sd, `_report.py`).
    - `surrogate`: the final sparse GP (in the inference space: unbounded, and whitened
      when `transform` holds a whitening); `transform`: x ↦ that space.
    - `X`, `y`: every successful evaluation (initial and new) in the original space;
      `num_failed`: evaluations after `init` that failed (NaN, ±inf or raised).
    """

    posterior: eqx.Module
    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    reported_evaluations: Int[Array, ""]
    surrogate: sparse.SparsePosterior
    transform: WhitenedTransform
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    num_failed: int = eqx.field(static=True)


class SVBMCAskInfo(eqx.Module):
    """What `SVBMC.ask` chose: the acquisition's value at the point (log a₁, or the monotone
    transform of a₂ that is searched; NaN for a probe) and whether the point is a probe, the
    top of a surrogate mountain asked after a stuck round."""

    acquisition: Float[Array, ""]
    probe: Bool[Array, ""]


class SVBMCUpdateInfo(eqx.Module):
    """The retraining at the end of a round: the new ELBO and its BQ sd, where the
    hyperparameters came from (`_training.FITTED`, `UNFITTED_START`, `LAST_ROUND` or `KEPT`), and
    whether the round was stuck (every candidate mixture found a surrogate mountain, so the
    next round starts with probes)."""

    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    hyperparameter_source: Int[Array, ""]
    stuck: Bool[Array, ""]


def _validate_bounds(lower_bounds, upper_bounds, dimension: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    def as_bounds(bounds, fill, name):
        if bounds is None:
            return np.full(dimension, fill, dtype)
        bounds = np.asarray(as_floating(bounds, name), dtype)
        if bounds.shape != (dimension,):
            raise ValueError(f"`{name}` must have shape ({dimension},) to match X, got shape {bounds.shape}.")
        return bounds

    lower = as_bounds(lower_bounds, -np.inf, "lower_bounds")
    upper = as_bounds(upper_bounds, np.inf, "upper_bounds")
    if not np.all(lower < upper):
        bad = np.flatnonzero(~(lower < upper)).tolist()
        raise ValueError(
            f"`lower_bounds` must be strictly smaller than `upper_bounds` in every coordinate; violated at {bad}."
        )
    return lower, upper


def _row_checks(X, y, observation_variance, lower, upper, xp):
    """(finite, inside) masks of the initial rows: finite X, y and variance; strictly inside
    the bounds. `xp` is NumPy where `init` drops rows (jnp would be staged out under a
    caller's jit) and jax.numpy for the mask of traced rows."""
    finite = xp.all(xp.isfinite(X), axis=1) & xp.isfinite(y) & xp.isfinite(observation_variance)
    inside = xp.all((X > lower[None, :]) & (X < upper[None, :]), axis=1)
    return finite, inside


def _drop_unusable_rows(X, y, observation_variance, lower, upper):
    """Drop rows with non-finite values or outside the bounds, warning with the count."""
    finite, inside = _row_checks(X, y, observation_variance, lower, upper, np)
    usable = finite & inside
    if not np.all(usable):
        warnings.warn(
            f"SVBMC.init: dropped {np.sum(~finite)} initial evaluations with NaN or infinite values and "
            f"{np.sum(finite & ~inside)} outside the bounds; {np.sum(usable)} remain.",
            RuntimeWarning,
            stacklevel=3,
        )
    return X[usable], y[usable], observation_variance[usable]


def _initial_rows(X, y, noise_sd, noiseless_variance: float, lower_bounds, upper_bounds):
    """(X, y, σ²_obs, BoundedTransform, noisy) of `init`'s arguments, checked; concrete rows
    that cannot be used are dropped here, traced ones are masked in `_initialise`."""
    X_traced = isinstance(X, jax.core.Tracer) or isinstance(y, jax.core.Tracer)
    X = as_floating(X, "X") if X_traced else np.asarray(as_floating(X, "X"))
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (num_points, dimension), got shape {X.shape}.")
    dtype = X.dtype
    num_points, dimension = X.shape
    y = as_floating(y, "y").astype(dtype) if X_traced else np.asarray(as_floating(y, "y"), dtype)
    if y.shape != (num_points,):
        raise ValueError(f"`y` must have shape ({num_points},) to match X {X.shape}, got shape {y.shape}.")
    noisy = noise_sd is not None
    if noisy:
        sd = np.asarray(as_floating(noise_sd, "noise_sd"), dtype)
        if sd.ndim not in (0, 1) or (sd.ndim == 1 and sd.shape != (num_points,)):
            raise ValueError(f"`noise_sd` must be a scalar or have shape ({num_points},), got shape {sd.shape}.")
        observation_variance = np.broadcast_to(sd**2, (num_points,)).astype(dtype)
    else:
        observation_variance = np.full(num_points, noiseless_variance, dtype)
    lower, upper = _validate_bounds(lower_bounds, upper_bounds, dimension, dtype)
    if not X_traced:
        X, y, observation_variance = _drop_unusable_rows(X.astype(dtype), y, observation_variance, lower, upper)
        if X.shape[0] < 2:
            raise ValueError(
                "SVBMC needs at least 2 usable initial evaluations (rows of `X` and `y` that are finite "
                f"and strictly inside `lower_bounds`, `upper_bounds`), got {X.shape[0]}."
            )
    return X, y, observation_variance, BoundedTransform(lower, upper), noisy


@eqx.filter_jit
def _initialise(
    learner: "SVBMC", X, y, observation_variance, key, transform, budget, free_rows: int, noisy: bool
) -> SVBMCState:
    X = jnp.asarray(X)
    space = WhitenedTransform.identity(transform)
    inputs = space.to_unbounded(X)
    log_densities = jnp.asarray(y) + space.log_abs_det_jacobian(inputs)
    observation_variance = jnp.asarray(observation_variance)
    # rows `init` could not drop (X, y traced) are kept but masked out, as failed evaluations
    # are; so are rows within rounding of a bound, which the probit map sends to ±inf
    finite, inside = _row_checks(X, jnp.asarray(y), observation_variance, transform.lower, transform.upper, jnp)
    mapped = jnp.all(jnp.isfinite(inputs), axis=1) & jnp.isfinite(log_densities)
    usable = finite & inside & mapped
    count = jnp.maximum(jnp.sum(usable.astype(inputs.dtype)), 1.0)
    fill = jnp.sum(jnp.where(usable[:, None], inputs, 0.0), axis=0) / count
    inputs = jnp.where(usable[:, None], inputs, fill)
    # an initial row that fails is not censored (`init` drops it when it can): +inf noise marks it
    evaluations = Evaluations.start(
        inputs, log_densities, jnp.where(usable, observation_variance, jnp.inf), usable, budget, free_rows=free_rows
    )
    padded = jnp.concatenate([inputs, jnp.zeros((free_rows, inputs.shape[1]), inputs.dtype)])
    evaluations = eqx.tree_at(lambda e: e.inputs, evaluations, padded)  # masked rows at `fill`, not 0
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    _, train_key = jax.random.split(key)
    space, inputs, log_densities, fit, whitening_pass = fit_and_whiten(
        space,
        evaluations.inputs,
        evaluations.values,
        evaluations.noise_variance,
        evaluations.succeeded,
        train_key,
        learner,
        num_initial=evaluations.num_initial,
    )
    evaluations = eqx.tree_at(lambda e: (e.inputs, e.values), evaluations, (inputs, log_densities))
    return SVBMCState(
        evaluations=evaluations,
        surrogate=fit.posterior,
        posterior=fit.mixture,
        earlier_posterior=fit.mixture,
        elbo=fit.elbo,
        elbo_sd=fit.elbo_sd,
        center=fit.center,
        width=fit.width,
        transform=space,
        whitening_pass=whitening_pass,
        probes=fit.probes,
        stuck=fit.stuck,
        hyperparameter_source=fit.hyperparameter_source,
        history=start_history(fit.mixture, fit.elbo, fit.elbo_sd, learner, free_rows),
        noisy=noisy,
    )


def _training_rows(learner: "SVBMC", evaluations: Evaluations):
    rows = (evaluations.inputs, evaluations.values, evaluations.noise_variance, evaluations.succeeded)
    return training_rows(rows, learner, evaluations.num_initial, evaluations.censored)


def _acquisition(
    learner: "SVBMC", state: SVBMCState, keep: Bool[Array, " C"], key: PRNGKeyArray
) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
    """The acquisition to maximise in the inference space: `learner.acquisition`'s objective,
    by default log a₁ for exact targets and IMIQR's monotone transform of a₂ for noisy ones
    (Li et al. 2023, §3.4, eqs. 1–2); `keep` marks the training rows (`training_rows`)."""
    acquisition = learner.acquisition
    if acquisition is None:
        acquisition = IMIQR() if state.noisy else ProspectiveUncertainty()
    return acquisition.objective(learner, state, keep, key)


def _ask_unbounded(learner: "SVBMC", state: SVBMCState, key: PRNGKeyArray):
    """(u, acquisition value): the acquisition's maximiser in u, the unbounded space before
    whitening, where the bounds are a box. The acquisition of w = L⁻¹(u − m) is searched
    from mixture samples and the best training points, mapped to u."""
    space = state.transform
    evaluations = state.evaluations
    candidate_key, reference_key = jax.random.split(key)
    keep, values, _ = _training_rows(learner, evaluations)
    acquisition = _acquisition(learner, state, keep, reference_key)

    def objective(u):
        return acquisition(space.whiten(u))

    num_top = min(learner.num_search_starts, evaluations.capacity)
    top_values, top_rows = jax.lax.top_k(jnp.where(keep, values, -jnp.inf), num_top)
    # the search stays where x(u) is strictly inside the bounds: beyond, x rounds onto a
    # bound and the evaluation would be lost
    u_min, u_max = space.bounded.unbounded_limits()
    samples = space.unwhiten(state.posterior.sample(candidate_key, learner.num_candidates))
    samples = jnp.clip(samples, u_min[None], u_max[None])
    top_inputs = jnp.where(
        jnp.isfinite(top_values)[:, None], space.unwhiten(evaluations.inputs[top_rows]), samples[:num_top]
    )
    candidates = jnp.concatenate([samples, top_inputs])
    scale = jnp.sqrt(jnp.diag(space.factor @ state.posterior.covariance() @ space.factor.T))
    search = maximize_from_candidates(
        objective,
        candidates,
        num_starts=learner.num_search_starts,
        scale=scale,
        num_steps=learner.search_steps,
        learning_rate=0.05,
        lower=u_min,
        upper=u_max,
    )
    return search.x, search.value


def _record(learner: "SVBMC", state: SVBMCState, x, y, noise_sd) -> tuple[SVBMCState, Bool[Array, ""]]:
    """Store one evaluation and update the sparse GP by rank-1 steps:
    the point joins the inducing set (Li et al. 2023, App. C.5 case 1) while there is room,
    then the observation is appended (case 2). The point joins even where the inducing
    inputs nearly span it: the jitter ε keeps the new Cholesky pivot ≥ √ε, and only a new
    inducing input lowers the variance floor at the point (`sparse.reducible_variance`),
    without which a₁ can pick the same point again. A value below the trimming level enters
    censored at that level, and a failed evaluation (NaN, ±inf, or a bad `noise_sd`) at a
    finite input at the lowest value the fit keeps, with σ²_obs = `noiseless_variance`
    (`_training.training_rows`)."""
    evaluations = state.evaluations
    dtype = evaluations.values.dtype
    u = state.transform.to_unbounded(jnp.asarray(x, dtype))
    log_density = jnp.asarray(y, dtype) + state.transform.log_abs_det_jacobian(u)
    variance = learner.noiseless_variance if noise_sd is None else jnp.asarray(noise_sd, dtype) ** 2
    variance = jnp.asarray(variance, dtype)
    located = jnp.all(jnp.isfinite(u))
    good = jnp.isfinite(log_density) & located & jnp.isfinite(variance) & (variance > 0)
    safe_u = jnp.where(located, u, state.center)
    safe_log_density = jnp.where(good, log_density, 0.0)
    safe_variance = jnp.where(good, variance, jnp.asarray(learner.noiseless_variance, dtype))

    def update(surrogate):
        value, total = new_point_value_and_noise(evaluations, learner, safe_log_density, safe_variance, good)
        add = ~jnp.all(surrogate.inducing_mask)
        # the cond skips the work in a single run; `where` keeps a vmapped run (both branches) from a full-buffer error
        surrogate = jax.lax.cond(add, lambda p: sparse.add_inducing_point(p, safe_u, where=add), lambda p: p, surrogate)
        return sparse.update(surrogate, safe_u, value, total)

    surrogate = jax.lax.cond(located, update, lambda p: p, state.surrogate)
    evaluations = evaluations.record(u, safe_log_density, safe_variance, good)
    return eqx.tree_at(lambda s: (s.evaluations, s.surrogate), state, (evaluations, surrogate)), good


def _retrain(learner: "SVBMC", state: SVBMCState, key: PRNGKeyArray) -> tuple[SVBMCState, SVBMCUpdateInfo]:
    evaluations = state.evaluations
    surrogate = state.surrogate
    previous = Previous(Surrogate(surrogate.kernel, surrogate.mean), state.posterior, state.earlier_posterior)
    fit = retrain(
        evaluations.inputs,
        evaluations.values,
        evaluations.noise_variance,
        evaluations.succeeded,
        key,
        learner,
        num_initial=evaluations.num_initial,
        previous=previous,
        failed=evaluations.censored,
        refit_hyperparameters=learner.refit_schedule(state.history.num_rounds, evaluations.finished),
    )
    history = record_round(state.history, fit.mixture, fit.elbo, fit.elbo_sd, evaluations.num_evaluations)
    state = eqx.tree_at(
        lambda s: (
            s.surrogate,
            s.posterior,
            s.earlier_posterior,
            s.elbo,
            s.elbo_sd,
            s.center,
            s.width,
            s.probes,
            s.stuck,
            s.hyperparameter_source,
            s.history,
        ),
        state,
        (
            fit.posterior,
            fit.mixture,
            state.posterior,
            fit.elbo,
            fit.elbo_sd,
            fit.center,
            fit.width,
            fit.probes,
            fit.stuck,
            fit.hyperparameter_source,
            history,
        ),
    )
    return state, SVBMCUpdateInfo(fit.elbo, fit.elbo_sd, fit.hyperparameter_source, fit.stuck)


class SVBMC(AbstractActiveLearner[SVBMCState]):
    """Sparse Variational Bayesian Monte Carlo (Li, Clarté & Acerbi 2023): Bayesian
    inference from many existing evaluations of a log density with a sparse GP surrogate,
    noise shaping, sparse Bayesian quadrature and a small budget of actively chosen new
    evaluations.

    The fields are the method's constants, the paper's where it gives them (§3, App. B),
    else VBMC's (Acerbi 2018, 2020) or chosen for small CPU runs. They are static:
    changing one recompiles. `init` fits the surrogate and the variational mixture to the
    existing evaluations; `gpcompose.run_black_box` or `gpcompose.run_traceable` spend
    the budget (`fit` does the whole run for a Python target); `result` reads the state.

    A failed evaluation (NaN, ±inf, or the target raised) at x is trained on as an
    observation at the lowest value the fit keeps, ỹ(x) = min_{n kept} y_n, which trimming
    keeps from falling below the trimming level y⋆ (a censored observation,
    `active_learning.censor_failures`), so that the surrogate, q and the acquisition move
    away from it.
    """

    # n_active: evaluations per round, each round ending in a retraining (Li et al. 2023, §3: 5)
    batch_size: int = eqx.field(static=True, default=5)
    # K_max, the most mixture components (Li et al. 2023, §3: 30)
    max_components: int = eqx.field(static=True, default=30)
    # "axis": the paper's components with a shared diagonal scale (Li et al. 2023, App. A.5); "rotated":
    # a shared lower-triangular scale learned with the ELBO (VBMC's rotoscaling, Acerbi 2020)
    mixture_family: Literal["axis", "rotated"] = eqx.field(static=True, default="axis")
    # refit in the space whitened by q's mean and covariance, as VBMC does (Acerbi 2020); on
    # because an axis-aligned mixture and quadratic mean cannot follow a correlated posterior
    whitening: bool = eqx.field(static=True, default=True)
    # with `whitening`, fit first in the space whitened by the Gaussian of the highest rows
    # (`_whitening.highest_points_gaussian`), since the given space may be strongly correlated
    highest_points_whitening: bool = eqx.field(static=True, default=True)
    # a whitened fit is dropped if its ELBO is lower by more than this many combined BQ sds; two,
    # so that a drop within the two estimates' noise does not decide
    whitening_max_elbo_drop: float = eqx.field(static=True, default=2.0)
    # whitening passes at `init`, each whitening by the q kept so far; several because a
    # pass whitened by a poor first q leaves correlations behind
    whitening_passes: int = eqx.field(static=True, default=3)
    # the passes stop once every correlation of q in the current space is at most this in
    # absolute value (whitening by q would do little more than rescale the axes); PyVBMC's 0.05
    whitening_correlation_threshold: float = eqx.field(static=True, default=0.05)
    # σ²_obs of an exact target (Li et al. 2023, §3)
    noiseless_variance: float = eqx.field(static=True, default=1e-5)
    # trimming: β of the confidence bounds and η_trim / D (Li et al. 2023, App. B.1: 1.96 and 20)
    trim_beta: float = eqx.field(static=True, default=1.96)
    trim_threshold_per_dimension: float = eqx.field(static=True, default=20.0)
    # a new evaluation below the trimming level is kept, its value raised to that level, instead
    # of trimmed, so that the surrogate learns that q's mass there is too high
    censor_active_evaluations: bool = eqx.field(static=True, default=True)
    # noise shaping σ²_min, σ²_med, λ_σ and θ_σ / D (Li et al. 2023, App. B.3: 1e-3, 1, 0.05, 10)
    shaping_minimum_variance: float = eqx.field(static=True, default=1e-3)
    shaping_median_variance: float = eqx.field(static=True, default=1.0)
    shaping_slope: float = eqx.field(static=True, default=0.05)
    shaping_threshold_per_dimension: float = eqx.field(static=True, default=10.0)
    # the exact GP's subset and its strata for the starting hyperparameters (Li et al. 2023, §3.3: 300, 5)
    subset_size: int = eqx.field(static=True, default=300)
    num_strata: int = eqx.field(static=True, default=5)
    # inducing-point selection: trace tolerance and M_min (Li et al. 2023, App. B.2: 1e-5, 200);
    # `max_inducing` None is the paper's M_max = 300 + 2√N_f
    inducing_tolerance: float = eqx.field(static=True, default=1e-5)
    min_inducing: int = eqx.field(static=True, default=200)
    max_inducing: int | None = eqx.field(static=True, default=None)
    # BFGS steps of the subset's exact-GP MAP, restarted at `init` from the start's lengthscales
    # times each factor (the paper leaves the optimiser unstated); the active phase's fits start
    # from the current hyperparameters alone
    exact_fit_steps: int = eqx.field(static=True, default=200)
    exact_fit_lengthscale_factors: tuple[float, ...] = eqx.field(static=True, default=(1.0, 0.5, 0.25))
    # BFGS steps of the SGPR MAP with the inducing points fixed (unstated in the paper); BFGS is
    # preconditioned by the hyperprior's widths (`Surrogate.coordinate_scales`)
    sparse_fit_steps: int = eqx.field(static=True, default=30)
    # which active rounds refit the hyperparameters: `DoublingRounds()` (1, 2, 4, … and the last) [ours],
    # since a round adds a few points to thousands; `EveryRound()` as Li et al. (2023, §3, step 7)
    refit_schedule: AbstractRefitSchedule = eqx.field(default_factory=DoublingRounds)
    # the quadratic mean's scales ω_d are capped at this times the width of the high points'
    # box, so that the mean cannot stay flat where the data fall off
    quadratic_scale_cap: float = eqx.field(static=True, default=1.0)
    # refit guard: a fit is rejected if its mean exceeds y_max + this·D at the training inputs or
    # at `peak_check_samples` draws of q; VBMC bounds its quadratic mean by y_max + D (Acerbi 2018)
    peak_tolerance_per_dimension: float = eqx.field(static=True, default=1.0)
    peak_check_samples: int = eqx.field(static=True, default=1024)
    # VBMC's final choice (Acerbi 2018): report the last round if its BQ sd is at most this
    # (TolSD 0.1), else the recent round with the highest lower bound; None: always the last round
    report_sd_tolerance: float | None = eqx.field(static=True, default=0.1)
    # that lower bound is ELBO − this·sd, over the last this fraction of rounds (VBMC's
    # SafeSD 5 and FracBack 0.25, Acerbi 2018)
    report_safe_sd: float = eqx.field(static=True, default=5.0)
    report_window_fraction: float = eqx.field(static=True, default=0.25)
    # Adam steps per build-up stage at `init` and per retraining, and their learning rate in
    # scale-free coordinates (the paper leaves them unstated)
    buildup_steps: int = eqx.field(static=True, default=300)
    round_steps: int = eqx.field(static=True, default=100)
    learning_rate: float = eqx.field(static=True, default=0.05)
    # the build-up stops adding components when the ELBO gains less than this (unstated in the paper)
    buildup_tolerance: float = eqx.field(static=True, default=0.01)
    # Monte Carlo samples of the entropy while optimising, None: PyVBMC's 100·K^{2/3}; and for
    # the ELBO that is reported and compared
    num_entropy_samples: int | None = eqx.field(static=True, default=None)
    final_entropy_samples: int = eqx.field(static=True, default=16384)
    # The acquisition, e.g. `ProspectiveUncertainty()` or `IMIQR()`; None chooses a₁ (`ProspectiveUncertainty()`)
    # for exact targets and `IMIQR()` for noisy ones (Li et al. 2023, §3.4).
    acquisition: AbstractSVBMCAcquisition | None = None
    # the acquisition search: candidates drawn from q, the best refined by Adam from this many
    # starts for this many steps (the paper leaves the optimiser unstated)
    num_candidates: int = eqx.field(static=True, default=256)
    num_search_starts: int = eqx.field(static=True, default=8)
    search_steps: int = eqx.field(static=True, default=30)

    def __check_init__(self):
        positive = (
            "batch_size",
            "max_components",
            "subset_size",
            "num_strata",
            "final_entropy_samples",
            "peak_check_samples",
            "whitening_passes",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")
        if not self.quadratic_scale_cap > 0:
            raise ValueError(f"`quadratic_scale_cap` must be positive, got {self.quadratic_scale_cap}.")
        factors = self.exact_fit_lengthscale_factors
        if len(factors) == 0 or not all(factor > 0 for factor in factors):
            raise ValueError(f"`exact_fit_lengthscale_factors` must be non-empty and positive, got {factors}.")
        threshold = self.whitening_correlation_threshold
        if not (math.isfinite(threshold) and 0 <= threshold < 1):
            raise ValueError(f"`whitening_correlation_threshold` must be in [0, 1), got {threshold}.")
        if not math.isfinite(self.whitening_max_elbo_drop):
            drop = self.whitening_max_elbo_drop
            raise ValueError(f"`whitening_max_elbo_drop` must be finite (a number of BQ sds), got {drop}.")
        tolerance = self.report_sd_tolerance
        if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0):
            raise ValueError(f"`report_sd_tolerance` must be None or a finite sd ≥ 0, got {tolerance}.")
        if not (math.isfinite(self.report_safe_sd) and self.report_safe_sd >= 0):
            raise ValueError(f"`report_safe_sd` must be a finite number of sds ≥ 0, got {self.report_safe_sd}.")
        if not 0 < self.report_window_fraction <= 1:
            raise ValueError(f"`report_window_fraction` must be in (0, 1], got {self.report_window_fraction}.")
        if self.mixture_family not in ("axis", "rotated"):
            raise ValueError(f"`mixture_family` must be 'axis' or 'rotated', got {self.mixture_family!r}.")
        if not isinstance(self.refit_schedule, AbstractRefitSchedule):
            raise ValueError(
                "`refit_schedule` must be a refit schedule (`svbmc.DoublingRounds()`, `svbmc.EveryRound()`), "
                f"got {self.refit_schedule!r}."
            )
        if self.acquisition is not None and not isinstance(self.acquisition, AbstractSVBMCAcquisition):
            raise ValueError(
                "`acquisition` must be None or an SVBMC acquisition module (`svbmc.ProspectiveUncertainty()`, "
                f"`svbmc.IMIQR()`), got {self.acquisition!r}."
            )

    @property
    def round_size(self) -> int:
        """`batch_size`: the evaluations between two retrainings."""
        return self.batch_size

    def round_complete(self, state: SVBMCState) -> Bool[Array, ""]:
        """Whether the last evaluation told ends a round: every `batch_size`-th one, the last
        of the budget, and [ours] a failed one. A failure is fitted as a censored observation
        only by a retraining (`_training.training_rows`); until then q keeps its mass over the
        failed region and the acquisition can ask beside the failed point for the rest of the
        round (a quarter of the asks on a 2-D Gaussian failing in a disc at its mode), so the
        retraining runs at once."""
        evaluations = state.evaluations
        last_row = jnp.maximum(evaluations.num_initial + evaluations.num_evaluations - 1, 0)
        failed = (evaluations.num_evaluations > 0) & ~evaluations.succeeded[last_row]
        return super().round_complete(state) | failed

    def inducing_range(self, num_points: int, budget: int) -> tuple[int, int]:
        """(M_min, M_max) = (200, 300 + 2√N_f) for a run of N_f = `budget` evaluations, both
        capped by the number of points (Li et al. 2023, App. B.2). A run takes N_f from its
        buffer's free rows (`active_learning.buffer_rows` of its budget), a shape."""
        maximum = self.max_inducing if self.max_inducing is not None else 300 + int(2 * math.sqrt(budget))
        maximum = min(maximum, num_points)
        return min(self.min_inducing, maximum), maximum

    def with_budget(self, state: SVBMCState, budget: int) -> SVBMCState:
        """The same run with `budget` new evaluations in all: the evaluation and GP data
        buffers resized, the inducing slots to the M_max + `batch_size` of that budget
        (`inducing_range`), so that the next retraining keeps the state's shapes, and the
        round history to that budget's reporting window (`resize_history`); both follow the
        buffer's free rows, so that a budget with the same rows changes no shape."""
        state = super().with_budget(state, budget)
        free_rows = state.evaluations.free_rows
        maximum = self.inducing_range(state.evaluations.num_initial, free_rows)[1]
        surrogate = state.surrogate.with_capacity(state.evaluations.capacity)
        surrogate = surrogate.with_inducing_capacity(maximum + self.batch_size)
        history = resize_history(state.history, history_capacity(self, free_rows))
        return eqx.tree_at(lambda s: (s.surrogate, s.history), state, (surrogate, history))

    def entropy_samples(self) -> int:
        """Monte Carlo samples for the entropy during optimisation: `num_entropy_samples`, or by
        default ⌈100 K_max^{2/3}⌉ (PyVBMC's N_ent = 100·K^{2/3})."""
        if self.num_entropy_samples is not None:
            return self.num_entropy_samples
        return math.ceil(100 * self.max_components ** (2 / 3))

    def init(
        self,
        X: Float[ArrayLike, "N D"],
        y: Float[ArrayLike, " N"],
        *,
        budget: int,
        key: PRNGKeyArray,
        lower_bounds: Float[ArrayLike, " D"] | None = None,
        upper_bounds: Float[ArrayLike, " D"] | None = None,
        noise_sd: Float[ArrayLike, "*N"] | None = None,
    ) -> SVBMCState:
        """Start SVBMC from existing evaluations y_n = log p(X_n) (Li et al. 2023, §3,
        steps 0–6).

        Maps bounded coordinates to R^D (probit; the log-Jacobian is added to y), trims,
        shapes the noise, fits the hyperparameters (exact-GP MAP on a stratified k-means
        subset, greedy inducing points, SGPR MAP) and builds the mixture up.

        **Arguments:**

        - `X` (N, D), `y` (N,): the evaluations. Rows with NaN/inf (or outside the bounds)
          are dropped with a `RuntimeWarning` that counts them.
        - `budget`: the number of new evaluations the run makes after `init` (N_f).
        - `key`: PRNG key of the fits at `init`.
        - `lower_bounds`, `upper_bounds`: optional (D,) bounds (±inf for open sides).
        - `noise_sd`: None for exact log densities (σ²_obs = `noiseless_variance`), else the
          sd of each initial value (scalar or (N,)); the run is then "noisy", uses by default the IMIQR
          a₂, and its target returns `(value, sd)`.

        Runs under `jax.vmap` over `key` when `X`, `y` are concrete arrays, and over `X`, `y`
        too: traced rows cannot be dropped, so unusable ones (non-finite, or outside the
        bounds) are kept but masked out of every fit (`evaluations.succeeded` is False for
        them), without a warning.
        """
        free_rows = buffer_rows(budget)  # checks `budget`
        check_key(key)
        X, y, variance, transform, noisy = _initial_rows(
            X, y, noise_sd, self.noiseless_variance, lower_bounds, upper_bounds
        )
        return _initialise(self, X, y, variance, key, transform, jnp.asarray(budget, jnp.int32), free_rows, noisy)

    @public_jit()
    def ask(self, state: SVBMCState, key: PRNGKeyArray) -> tuple[Float[Array, " D"], SVBMCAskInfo]:
        """The next point to evaluate, in the original space: the maximiser of the
        acquisition (a₁ or a₂), found from mixture samples and the best training points by
        a vmapped multi-start Adam search (Li et al. 2023, §3.4), strictly inside the bounds
        (`BoundedTransform.unbounded_limits`) — or, for the first points of a round after a
        retraining that was stuck (every candidate mixture found a surrogate mountain), the
        tops of those mountains (`_training.retrain`). A failed evaluation's input is never
        asked again: the surrogate holds it at the lowest value the fit keeps, and should the
        search still return it (`active_learning.repeats_failure`), a draw of q is asked
        instead."""
        count = state.probes.shape[0]
        in_round = state.evaluations.num_evaluations % self.batch_size
        slot = jnp.minimum(in_round, count - 1)
        probing = state.stuck & (in_round < count)

        def probe():  # in u, inside the search's limits
            u_min, u_max = state.transform.bounded.unbounded_limits()
            u = jnp.clip(state.transform.unwhiten(state.probes[slot]), u_min, u_max)
            return u, jnp.full((), jnp.nan, u.dtype)

        u, value = jax.lax.cond(probing, probe, lambda: _ask_unbounded(self, state, key))
        space, evaluations = state.transform, state.evaluations
        u_min, u_max = space.bounded.unbounded_limits()
        draw = jnp.clip(space.unwhiten(state.posterior.sample(jax.random.fold_in(key, 1), 1)[0]), u_min, u_max)
        u = jnp.where(repeats_failure(space.whiten(u), evaluations.inputs, evaluations.censored), draw, u)
        return space.bounded.from_unbounded(u), SVBMCAskInfo(value, probing)

    @public_jit()
    def record(
        self,
        state: SVBMCState,
        x: Float[ArrayLike, " D"],
        y: Float[ArrayLike, ""],
        noise_sd: Float[ArrayLike, ""] | None = None,
    ) -> tuple[SVBMCState, Bool[Array, ""]]:
        """Store the evaluation y = log p(x) (original space) and update the sparse GP by
        rank-1 steps. NaN/±inf marks a failed evaluation: kept with its input and fitted as a
        censored observation at the lowest value the fit keeps (`_training.training_rows`).
        `noise_sd` is the sd of a noisy evaluation (None: σ²_obs = `noiseless_variance`)."""
        return _record(self, state, x, y, noise_sd)

    @public_jit()
    def update(self, state: SVBMCState, key: PRNGKeyArray) -> tuple[SVBMCState, SVBMCUpdateInfo]:
        """The retraining that ends a round (Li et al. 2023, §3 step 7): trimming, noise
        shaping, hyperparameters, inducing points and mixture."""
        return _retrain(self, state, key)

    def progress_summary(self, state: SVBMCState) -> dict[str, Array | tuple[Array, Array]]:
        """The last round's ELBO ± its BQ sd, the mixture's active components and the failed
        evaluations, for the progress display."""
        components = jnp.sum(state.posterior.mask, dtype=jnp.int32)
        return {"ELBO": (state.elbo, state.elbo_sd), "components": components, **super().progress_summary(state)}

    def result(self, state: SVBMCState) -> SVBMCResult:
        """The `SVBMCResult` of a (finished or unfinished) run; for one run, not a batch.
        Its mixture and ELBO are those of the round `_report.reported_slot` picks (the last,
        unless its ELBO is still uncertain); its surrogate is always the last round's."""
        require_single_run(state, "SVBMC")
        transform = state.transform
        lower, upper = np.asarray(transform.lower), np.asarray(transform.upper)
        bounded = bool(np.any(np.isfinite(lower)) or np.any(np.isfinite(upper)))
        history = state.history
        slot = reported_slot(history, self)
        mixture = jax.tree_util.tree_map(lambda stack: stack[slot], history.mixtures)
        if self.whitening:
            mixture = mixture.affine_image(transform.shift, transform.factor)
        posterior = TransformedMixture(mixture, transform.bounded) if bounded else mixture
        evaluations = state.evaluations
        # mapped on the whole buffer (one compiled program for every count of rows), then selected
        X, y = evaluations.succeeded_rows(*_original_space(transform, evaluations))
        return SVBMCResult(
            posterior,
            history.elbos[slot],
            history.elbo_sds[slot],
            history.evaluations[slot],
            state.surrogate,
            transform,
            X,
            y,
            int(evaluations.num_failed),
        )


@eqx.filter_jit
def _original_space(transform: WhitenedTransform, evaluations: Evaluations):
    """Every row's input and log density in the original space (the log-Jacobian of the
    map to the inference space taken off)."""
    u = evaluations.inputs
    return transform.from_unbounded(u), evaluations.values - transform.log_abs_det_jacobian(u)


def fit(
    log_density: Callable[[np.ndarray], float | tuple[float, float]],
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    budget: int,
    learner: SVBMC | None = None,
    lower_bounds: Float[ArrayLike, " D"] | None = None,
    upper_bounds: Float[ArrayLike, " D"] | None = None,
    noise_sd: Float[ArrayLike, "*N"] | None = None,
    callback: Callable[[Progress], None] | None = None,
    checkpoint: Checkpoint | None = None,
    progress: bool | None = None,
) -> SVBMCResult:
    """SVBMC (Li, Clarté & Acerbi 2023) from existing evaluations (`X`, `y`) of a black-box
    log density, with `budget` new evaluations: `learner.init` (with the first half of
    `jax.random.split(key)`), `gpcompose.run_black_box` (with the second) and
    `learner.result`; `learner` defaults to `SVBMC()`.

    `log_density(x)` takes one point of the original space (a NumPy array) and returns
    log p(x) or, for noisy targets (`noise_sd` given), `(value, sd)`. An exception, NaN or
    ±inf is recorded as a failed evaluation and the run goes on. `callback` and
    `checkpoint` are `run_black_box`'s; a run saved to a checkpoint resumes with
    `gpcompose.load_checkpoint` and `run_black_box`. `progress`: a bar of the evaluations
    done / budget, the ELBO ± sd and the components (`run_black_box`; None: only where
    stderr is a terminal).
    """
    learner = SVBMC() if learner is None else learner
    check_key(key)
    init_key, loop_key = jax.random.split(key)
    state = learner.init(
        X, y, budget=budget, key=init_key, lower_bounds=lower_bounds, upper_bounds=upper_bounds, noise_sd=noise_sd
    )
    state = run_black_box(
        learner, log_density, state, loop_key, callback=callback, checkpoint=checkpoint, progress=progress
    )
    return learner.result(state)
