"""SVBMC as ask/tell steps on fixed-capacity buffers, a traceable `run`, and the `fit`
driver for black-box (Python) log densities."""

import dataclasses
import warnings
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .. import sparse
from .._black_box import call_black_box
from .._jit import public_jit
from ..acquisition import (
    log_expected_interquantile_range,
    log_prospective_uncertainty,
    maximise_multistart,
)
from ..transforms import BoundedTransform, TransformedMixture, WhitenedTransform
from ._options import SVBMCOptions
from ._report import record_round, reported_slot, start_history
from ._state import SVBMCState
from ._surrogate import Surrogate
from ._training import LAST_ROUND, Previous, new_point_value_and_noise, retrain, training_rows
from ._whitening import fit_and_whiten


class SVBMCResult(eqx.Module):
    """Outcome of an SVBMC run.

    - `posterior`: the variational posterior in the original space — a `VBMCMixture`
      when no coordinate is bounded (with whitening on, the image of the fitted mixture
      under w ↦ m + L w, in the rotated family), else its push-forward
      `TransformedMixture`; both have `.sample(key, n)` and `.log_prob(x)`.
    - `elbo`, `elbo_sd`: the ELBO (estimate of log Z) and its Bayesian-quadrature sd.
    - `reported_evaluations`: the active-phase evaluations of the round whose mixture and ELBO
      these are: the last round's, unless its BQ sd exceeds `options.report_sd_tolerance`
      (then the recent round with the highest ELBO − `report_safe_sd`·sd, `_report.py`).
    - `surrogate`: the final sparse GP (in the inference space: unbounded, and whitened
      when `transform` holds a whitening); `transform`: x ↦ that space.
    - `X`, `y`: every successful evaluation (initial and new) in the original space;
      `num_failed`: evaluations of the active phase that failed (NaN, ±inf or raised).
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


def _validate_bounds(lower_bounds, upper_bounds, dimension: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    def as_bounds(bounds, fill, name):
        if bounds is None:
            return np.full(dimension, fill, dtype)
        bounds = np.asarray(bounds, dtype)
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
            f"svbmc.init: dropped {np.sum(~finite)} initial evaluations with NaN or infinite values and "
            f"{np.sum(finite & ~inside)} outside the bounds; {np.sum(usable)} remain.",
            RuntimeWarning,
            stacklevel=3,
        )
    return X[usable], y[usable], observation_variance[usable]


def init(
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    budget: int = 200,
    batch_size: int = 5,
    lower_bounds: Float[ArrayLike, " D"] | None = None,
    upper_bounds: Float[ArrayLike, " D"] | None = None,
    noise_sd: Float[ArrayLike, "*N"] | None = None,
    options: SVBMCOptions | None = None,
) -> SVBMCState:
    """Start SVBMC from existing evaluations y_n = log p(X_n) (SVBMC §3, steps 0–6).

    Maps bounded coordinates to R^D (probit; the log-Jacobian is added to y), trims,
    shapes the noise, fits the hyperparameters (exact-GP MAP on a stratified k-means
    subset, greedy inducing points, SGPR MAP) and builds the mixture up.

    **Arguments:**

    - `X` (N, D), `y` (N,): the evaluations. Rows with NaN/inf (or outside the bounds)
      are dropped with a `RuntimeWarning` that counts them.
    - `key`: PRNG key of the run (stored in the state for the retraining steps).
    - `budget`: number of new evaluations (N_f); `batch_size`: evaluations per round
      (n_active) between retrainings.
    - `lower_bounds`, `upper_bounds`: optional (D,) bounds (±inf for open sides).
    - `noise_sd`: None for exact log densities (σ²_obs = 1e-5), else the sd of each
      initial value (scalar or (N,)); the run is then "noisy" and uses the IMIQR a₂.
    - `options`: an `SVBMCOptions` for the other constants (its budget/batch size are
      replaced by the arguments).

    Runs under `jax.vmap` over `key` when `X`, `y` are concrete arrays, and over `X`, `y`
    too: traced rows cannot be dropped, so unusable ones (non-finite, or outside the bounds)
    are kept but masked out of every fit (`state.succeeded` is False for them), without
    a warning.
    """
    X_traced = isinstance(X, jax.core.Tracer) or isinstance(y, jax.core.Tracer)
    X = jnp.asarray(X) if X_traced else np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (num_points, dimension), got shape {X.shape}.")
    dtype = X.dtype if np.issubdtype(X.dtype, np.floating) else jax.dtypes.canonicalize_dtype(float)
    num_points, dimension = X.shape
    y = jnp.asarray(y, dtype) if X_traced else np.asarray(y, dtype)
    if y.shape != (num_points,):
        raise ValueError(f"`y` must have shape ({num_points},) to match X {X.shape}, got shape {y.shape}.")
    options = SVBMCOptions() if options is None else options
    options = dataclasses.replace(options, budget=budget, batch_size=batch_size)
    noisy = noise_sd is not None
    if noisy:
        sd = np.asarray(noise_sd, dtype)
        if sd.ndim not in (0, 1) or (sd.ndim == 1 and sd.shape != (num_points,)):
            raise ValueError(f"`noise_sd` must be a scalar or have shape ({num_points},), got shape {sd.shape}.")
        observation_variance = np.broadcast_to(sd**2, (num_points,)).astype(dtype)
    else:
        observation_variance = np.full(num_points, options.noiseless_variance, dtype)
    lower, upper = _validate_bounds(lower_bounds, upper_bounds, dimension, dtype)
    if not X_traced:
        X, y, observation_variance = _drop_unusable_rows(X.astype(dtype), y, observation_variance, lower, upper)
        if X.shape[0] < 2:
            raise ValueError(f"SVBMC needs at least 2 usable initial evaluations, got {X.shape[0]}.")
    return _initialise(X, y, observation_variance, key, BoundedTransform(lower, upper), options, noisy)


@eqx.filter_jit
def _initialise(X, y, observation_variance, key, transform, options: SVBMCOptions, noisy: bool) -> SVBMCState:
    num_initial, dimension = X.shape
    capacity = num_initial + options.budget
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
    log_densities = jnp.where(usable, log_densities, 0.0)
    observation_variance = jnp.where(usable, observation_variance, 1.0)

    def pad(values, fill):
        return jnp.concatenate([values, jnp.full((options.budget,) + values.shape[1:], fill, values.dtype)])

    inputs = pad(inputs, 0.0)
    log_densities = pad(log_densities, 0.0)
    observation_variance = pad(observation_variance, 1.0)
    evaluated = jnp.arange(capacity) < num_initial
    succeeded = pad(usable, False)
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    run_key, train_key = jax.random.split(key)
    space, inputs, log_densities, fit, whitening_pass = fit_and_whiten(
        space,
        inputs,
        log_densities,
        observation_variance,
        succeeded,
        train_key,
        options,
        num_initial=num_initial,
    )
    return SVBMCState(
        inputs=inputs,
        log_densities=log_densities,
        observation_variance=observation_variance,
        evaluated=evaluated,
        succeeded=succeeded,
        num_initial=jnp.asarray(num_initial, jnp.int32),
        num_evaluations=jnp.zeros((), jnp.int32),
        num_pending=jnp.zeros((), jnp.int32),
        posterior=fit.posterior,
        mixture=fit.mixture,
        earlier_mixture=fit.mixture,
        elbo=fit.elbo,
        elbo_sd=fit.elbo_sd,
        centre=fit.centre,
        width=fit.width,
        transform=space,
        whitening_pass=whitening_pass,
        probes=fit.probes,
        stuck=fit.stuck,
        hyperparameter_source=fit.hyperparameter_source,
        history=start_history(fit.mixture, fit.elbo, fit.elbo_sd, options),
        key_data=jax.random.key_data(run_key),
        options=options,
        noisy=noisy,
    )


def _acquisition(
    state: SVBMCState, keep: Bool[Array, " C"], key: PRNGKeyArray
) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
    """The acquisition to maximise in the unbounded space: log a₁ for exact targets,
    −log E_q[sinh(α s⋆)] (a monotone transform of a₂) for noisy ones (§2.11); `keep`
    marks the training rows (`training_rows`)."""
    options = state.options
    kind = options.acquisition
    if kind == "auto":
        kind = "imiqr" if state.noisy else "uncertainty"
    if kind == "uncertainty":
        return lambda u: log_prospective_uncertainty(state.posterior, state.mixture, u)
    reference = state.mixture.sample(key, options.imiqr_reference_samples)
    typical_noise = jnp.median(jnp.where(keep, state.observation_variance, jnp.nan)[None], axis=1)[0]
    look_ahead_noise = jnp.where(jnp.isfinite(typical_noise), typical_noise, options.noiseless_variance)
    return lambda u: (
        -log_expected_interquantile_range(
            state.posterior, u, reference, look_ahead_noise, quantile=options.imiqr_quantile
        )
    )


def _ask_unbounded(state: SVBMCState, key: PRNGKeyArray) -> Float[Array, " D"]:
    """The acquisition's maximiser in u, the unbounded space before whitening, where the
    bounds are a box: the acquisition of w = L⁻¹(u − m) is searched from mixture samples
    and the best training points, mapped to u."""
    options = state.options
    space = state.transform
    candidate_key, reference_key = jax.random.split(key)
    keep, values, _ = training_rows(
        (state.inputs, state.log_densities, state.observation_variance, state.succeeded), options, state.num_initial
    )
    acquisition = _acquisition(state, keep, reference_key)

    def objective(u):
        return acquisition(space.whiten(u))

    num_top = min(options.num_search_starts, state.capacity)
    top_values, top_rows = jax.lax.top_k(jnp.where(keep, values, -jnp.inf), num_top)
    # the search stays where x(u) is strictly inside the bounds: beyond, x rounds onto a bound
    # and the evaluation would be lost (timing: 32 of 200 before)
    u_min, u_max = space.bounded.unbounded_limits()
    samples = space.unwhiten(state.mixture.sample(candidate_key, options.num_candidates))
    samples = jnp.clip(samples, u_min[None], u_max[None])
    top_inputs = jnp.where(jnp.isfinite(top_values)[:, None], space.unwhiten(state.inputs[top_rows]), samples[:num_top])
    candidates = jnp.concatenate([samples, top_inputs])
    values = jax.vmap(objective)(candidates)
    values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
    _, start_rows = jax.lax.top_k(values, options.num_search_starts)
    scale = jnp.sqrt(jnp.diag(space.factor @ state.mixture.covariance() @ space.factor.T))
    search = maximise_multistart(
        objective,
        candidates[start_rows],
        scale=scale,
        num_steps=options.search_steps,
        learning_rate=0.05,
        lower=u_min,
        upper=u_max,
    )
    return search.x


@public_jit()
def ask(state: SVBMCState, key: PRNGKeyArray) -> Float[Array, " D"]:
    """The next point to evaluate, in the original space: the maximiser of the
    acquisition (a₁ or a₂), found from mixture samples and the best training points by a
    vmapped multi-start Adam search (SVBMC §3.4), strictly inside the bounds
    (`BoundedTransform.unbounded_limits`) — or, for the first points of a round after a
    retraining that was stuck (every candidate mixture found a surrogate mountain), the
    tops of those mountains (`_training.retrain`). With `options.probe_fallback_mountain`, a
    round that kept the last round's hyperparameters because its new mixture found a mountain
    (not stuck) is followed by one probe, that mountain's top (`probes[0]`)."""
    count = state.probes.shape[0]
    fell_back = state.hyperparameter_source == LAST_ROUND
    num_probes = jnp.where(state.stuck, count, jnp.where(fell_back & state.options.probe_fallback_mountain, 1, 0))
    slot = jnp.minimum(state.num_pending, count - 1)
    probing = state.num_pending < num_probes

    def probe():  # in u, inside the search's limits
        u_min, u_max = state.transform.bounded.unbounded_limits()
        return jnp.clip(state.transform.unwhiten(state.probes[slot]), u_min, u_max)

    u = jax.lax.cond(probing, probe, lambda: _ask_unbounded(state, key))
    return state.transform.bounded.from_unbounded(u)


def _record(state: SVBMCState, x, y, noise_sd) -> SVBMCState:
    """Store one evaluation (failed ones too) and update the sparse GP by rank-1 steps:
    the point joins the inducing set (C.5 case 1) while the buffer has room, then the
    observation is appended (case 2). The point joins even when Z nearly spans it [ours]:
    the jitter ε keeps the new Cholesky pivot ≥ √ε, and only a new inducing input lowers
    the variance floor at the point (`sparse.reducible_variance`), without which a₁ can
    pick the same point again. A value below the trimming level enters censored at that
    level (`_training.training_rows`)."""
    options = state.options
    dtype = state.inputs.dtype
    u = state.transform.to_unbounded(jnp.asarray(x, dtype))
    log_density = jnp.asarray(y, dtype) + state.transform.log_abs_det_jacobian(u)
    variance = options.noiseless_variance if noise_sd is None else jnp.asarray(noise_sd, dtype) ** 2
    variance = jnp.asarray(variance, dtype)
    good = jnp.isfinite(log_density) & jnp.all(jnp.isfinite(u)) & jnp.isfinite(variance) & (variance > 0)
    slot = state.num_initial + state.num_evaluations
    slot = eqx.error_if(slot, slot >= state.capacity, "svbmc.tell: the evaluation budget is exhausted.")
    safe_u = jnp.where(good, u, state.centre)
    safe_log_density = jnp.where(good, log_density, 0.0)
    safe_variance = jnp.where(good, variance, 1.0)

    def update(posterior):
        value, total = new_point_value_and_noise(state, safe_log_density, safe_variance)
        add = ~jnp.all(posterior.inducing_mask)
        # the cond skips the work in a single run; `where` keeps a vmapped run (both branches) from a full-buffer error
        posterior = jax.lax.cond(add, lambda p: sparse.add_inducing_point(p, safe_u, where=add), lambda p: p, posterior)
        return sparse.update(posterior, safe_u, value, total)

    posterior = jax.lax.cond(good, update, lambda p: p, state.posterior)
    return eqx.tree_at(
        lambda s: (
            s.inputs,
            s.log_densities,
            s.observation_variance,
            s.evaluated,
            s.succeeded,
            s.num_evaluations,
            s.num_pending,
            s.posterior,
        ),
        state,
        (
            state.inputs.at[slot].set(safe_u),
            state.log_densities.at[slot].set(safe_log_density),
            state.observation_variance.at[slot].set(safe_variance),
            state.evaluated.at[slot].set(True),
            state.succeeded.at[slot].set(good),
            state.num_evaluations + 1,
            state.num_pending + 1,
            posterior,
        ),
    )


def _retrain_state(state: SVBMCState) -> SVBMCState:
    key, train_key = jax.random.split(state.key)
    previous = Previous(Surrogate(state.posterior.kernel, state.posterior.mean), state.mixture, state.earlier_mixture)
    num_initial = state.capacity - state.options.budget
    fit = retrain(
        state.inputs,
        state.log_densities,
        state.observation_variance,
        state.succeeded,
        train_key,
        state.options,
        num_initial=num_initial,
        previous=previous,
    )
    return eqx.tree_at(
        lambda s: (
            s.posterior,
            s.mixture,
            s.earlier_mixture,
            s.elbo,
            s.elbo_sd,
            s.centre,
            s.width,
            s.probes,
            s.stuck,
            s.hyperparameter_source,
            s.history,
            s.key_data,
            s.num_pending,
        ),
        state,
        (
            fit.posterior,
            fit.mixture,
            state.mixture,
            fit.elbo,
            fit.elbo_sd,
            fit.centre,
            fit.width,
            fit.probes,
            fit.stuck,
            fit.hyperparameter_source,
            record_round(state.history, fit.mixture, fit.elbo, fit.elbo_sd, state.num_evaluations),
            jax.random.key_data(key),
            jnp.zeros_like(state.num_pending),
        ),
    )


def _round_complete(state: SVBMCState):
    return (state.num_pending >= state.options.batch_size) | (state.num_evaluations >= state.options.budget)


@public_jit()
def tell(
    state: SVBMCState, x: Float[ArrayLike, " D"], y: Float[ArrayLike, ""], noise_sd: Float[ArrayLike, ""] | None = None
) -> SVBMCState:
    """Record the evaluation y = log p(x) (original space; NaN/±inf marks a failed
    evaluation, which is kept but not used), update the sparse GP by rank-1 steps, and
    after every `batch_size` evaluations (and at the end of the budget) retrain:
    trimming, noise shaping, hyperparameters, inducing points and mixture (§3 step 7).
    `noise_sd` is the sd of a noisy evaluation."""
    state = _record(state, x, y, noise_sd)
    return jax.lax.cond(_round_complete(state), _retrain_state, lambda s: s, state)


def _evaluate(log_density, x):
    value = log_density(x)
    if isinstance(value, tuple):
        return value
    return value, None


@eqx.filter_jit
def run(log_density: Callable, state: SVBMCState, key: PRNGKeyArray) -> SVBMCState:
    """Spend the rest of the budget on a JAX-traceable `log_density` (x ↦ log p(x) or
    (log p(x), sd)) in one compiled program: rounds of `batch_size` ask/evaluate/record
    steps, each followed by a retraining. The n-th evaluation's point is
    `ask(state, jax.random.fold_in(key, n))`, as in `fit`'s loop, so `run(f, init(X, y,
    key=k₁), k₂)` is `fit(f, X, y, key=k)` with (k₁, k₂) = `jax.random.split(k)` (to
    rounding: here f is traced). Resumes a state saved mid-round. Vmaps over seeds, each
    seed the run `fit` would make with its key:
    `jax.vmap(lambda k: svbmc.run(f, svbmc.init(X, y, key=jax.random.split(k)[0]),
    jax.random.split(k)[1]))(keys)`."""
    options = state.options

    def one_round(state):
        start = state.num_pending

        def one_evaluation(index, state):
            x = ask(state, jax.random.fold_in(key, state.num_evaluations))
            value, sd = _evaluate(log_density, x)
            active = (index >= start) & (state.num_evaluations < options.budget)
            return jax.lax.cond(active, lambda s: _record(s, x, value, sd), lambda s: s, state)

        return _retrain_state(jax.lax.fori_loop(0, options.batch_size, one_evaluation, state))

    def unfinished(state):
        return state.num_evaluations < options.budget

    return jax.lax.while_loop(unfinished, one_round, state)


def result(state: SVBMCState) -> SVBMCResult:
    """The `SVBMCResult` of a (finished or unfinished) run; for one run, not a batch. Its
    mixture and ELBO are those of the round `_report.reported_slot` picks (the last, unless
    its ELBO is still uncertain); its surrogate is always the last round's."""
    transform = state.transform
    bounded = bool(np.any(np.isfinite(np.asarray(transform.lower))) or np.any(np.isfinite(np.asarray(transform.upper))))
    history = state.history
    slot = reported_slot(history, state.options)
    mixture = jax.tree_util.tree_map(lambda stack: stack[slot], history.mixtures)
    if state.options.whitening:
        mixture = mixture.affine_image(transform.shift, transform.factor)
    posterior = TransformedMixture(mixture, transform.bounded) if bounded else mixture
    succeeded = np.asarray(state.succeeded)
    inputs = np.asarray(state.inputs)[succeeded]
    u = jnp.asarray(inputs)
    X = transform.from_unbounded(u)
    y = jnp.asarray(np.asarray(state.log_densities)[succeeded]) - transform.log_abs_det_jacobian(u)
    active_phase = np.arange(succeeded.shape[0]) >= int(state.num_initial)
    num_failed = int(np.sum(np.asarray(state.evaluated) & ~succeeded & active_phase))
    return SVBMCResult(
        posterior,
        history.elbos[slot],
        history.elbo_sds[slot],
        history.evaluations[slot],
        state.posterior,
        transform,
        X,
        y,
        num_failed,
    )


def _call_safely(log_density, x, noisy):
    """(value, sd) of one evaluation; sd is None unless the target returned one (a failed
    evaluation of a noisy target gets sd 1, which `tell` records but never uses)."""
    outcome = call_black_box(log_density, x, description="svbmc.fit: log_density")
    if isinstance(outcome, tuple):
        return outcome
    return outcome, (1.0 if noisy and not np.isfinite(outcome) else None)


def fit(
    log_density: Callable,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    budget: int = 200,
    batch_size: int = 5,
    lower_bounds: Float[ArrayLike, " D"] | None = None,
    upper_bounds: Float[ArrayLike, " D"] | None = None,
    noise_sd: Float[ArrayLike, "*N"] | None = None,
    options: SVBMCOptions | None = None,
    state: SVBMCState | None = None,
    callback: Callable[[SVBMCState], None] | None = None,
) -> SVBMCResult:
    """Sparse Variational Bayesian Monte Carlo (Li, Clarté & Acerbi 2023) from existing
    evaluations (`X`, `y`) of a black-box log density, with `budget` new evaluations.

    `log_density(x)` takes one point of the original space (a NumPy array) and returns
    log p(x) or, for noisy targets, `(value, sd)`. It is called from Python between the
    jitted `ask` and `tell`, so it need not be a JAX function; an exception or a NaN is
    recorded as a failed evaluation and the run goes on. Pass a `state` (e.g. loaded with
    `eqx.tree_deserialise_leaves`) to resume a run; `callback(state)` is called after
    every evaluation (progress display, checkpoints). For a JAX-traceable target, `run`
    does the same in one compiled program.
    """
    init_key, loop_key = jax.random.split(key)
    if state is None:
        state = init(
            X,
            y,
            key=init_key,
            budget=budget,
            batch_size=batch_size,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
            noise_sd=noise_sd,
            options=options,
        )
    while int(state.num_evaluations) < state.options.budget:
        x = ask(state, jax.random.fold_in(loop_key, int(state.num_evaluations)))
        value, sd = _call_safely(log_density, np.asarray(x), state.noisy)
        state = tell(state, x, value, sd)
        if callback is not None:
            callback(state)
    return result(state)
