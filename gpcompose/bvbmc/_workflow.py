"""BVBMC as ask/tell steps on fixed-capacity buffers, a traceable `run`, and the `fit`
driver for black-box (Python) log densities (Naiff 2019, thesis Alg. 3)."""

import dataclasses
import warnings
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .. import gp
from .._black_box import call_black_box
from .._jit import public_jit
from .._observations import observed_box
from ..acquisition import LOG_BMC_ACQUISITIONS, log_variance_regulariser, maximise_multistart
from ..boosting import Boosting
from ..kernels import AbstractKernel
from ..mixtures import GaussianMixture
from ..quadrature import elbo
from ._options import BVBMCOptions
from ._state import BVBMCState
from ._surrogate import fit_prior, initial_prior, output_scaling, raw_units_posterior, scaled_prediction


class BVBMCResult(eqx.Module):
    """Outcome of a BVBMC run.

    - `posterior`: the boosted `GaussianMixture` (`.sample(key, n)`, `.log_prob(x)`).
    - `elbo`, `elbo_sd`: the surrogate ELBO of the mixture (an estimate of log Z) in raw
      units, and the GP's posterior sd of its expected-log-density part (BMC variance).
    - `surrogate`: the final GP of the log density, in raw units.
    - `X`, `y`: every successful evaluation (initial and new); `num_failed`: evaluations
      that returned NaN/±inf or raised.
    """

    posterior: GaussianMixture
    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    surrogate: gp.ExactPosterior
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    num_failed: int = eqx.field(static=True)


def _check_initial(X, y, traced: bool):
    X = jnp.asarray(X) if traced else np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (num_points, dimension), got shape {X.shape}.")
    dtype = X.dtype if np.issubdtype(X.dtype, np.floating) else jax.dtypes.canonicalize_dtype(float)
    y = jnp.asarray(y, dtype) if traced else np.asarray(y, dtype)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},) to match X {X.shape}, got shape {y.shape}.")
    if traced:
        return X.astype(dtype), y
    usable = np.all(np.isfinite(X), axis=1) & np.isfinite(y)
    if not np.all(usable):
        warnings.warn(
            f"bvbmc.init: dropped {np.sum(~usable)} initial evaluations with NaN or infinite values; "
            f"{np.sum(usable)} remain.",
            RuntimeWarning,
            stacklevel=3,
        )
    if np.sum(usable) < 2:
        raise ValueError(f"BVBMC needs at least 2 finite initial evaluations, got {np.sum(usable)}.")
    return X[usable].astype(dtype), y[usable]


def init(
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    budget: int = 100,
    kernel: AbstractKernel | None = None,
    joint_update_every: int | None = None,
    boosting: Boosting | None = None,
    options: BVBMCOptions | None = None,
) -> BVBMCState:
    """Start BVBMC from initial evaluations y_n = log ḡ(X_n) (Alg. 3 lines 1–6).

    Scales the outputs (normalize or zeromax), fixes the prior mean (eq. 6.11), fits the
    kernel by ML-II once, conditions the GP (in raw units, buffers of N + `budget` rows)
    and fits the first component q₀ = N(μ₀, Σ₀) by maximising the surrogate ELBO, from
    the mean and variance of the initial points (§6.1.1.3, option 2).

    **Arguments:**

    - `X` (N, D), `y` (N,): the evaluations; rows with NaN/inf are dropped with a
      `RuntimeWarning` that counts them.
    - `key`: PRNG key of the run (stored in the state for the boosting steps).
    - `budget`: number of new evaluations (= boosting iterations).
    - `kernel`: initial kernel for ML-II (default: product Matérn-5/2).
    - `joint_update_every`: replaces `boosting.joint_update_every` when given.
    - `boosting`: the `gpcompose.boosting.Boosting` step (default `Boosting()`).
    - `options`: a `BVBMCOptions` (its `budget` is replaced by the argument).

    Runs under `jax.vmap` over `key` (with `X`, `y` fixed or traced).
    """
    traced = any(isinstance(value, jax.core.Tracer) for value in (X, y))
    X, y = _check_initial(X, y, traced)
    if kernel is not None and not isinstance(kernel, AbstractKernel):
        raise ValueError(f"`kernel` must be an AbstractKernel or None, got {type(kernel).__name__}.")
    options = BVBMCOptions() if options is None else options
    options = dataclasses.replace(options, budget=budget)
    algorithm = Boosting() if boosting is None else boosting
    if not isinstance(algorithm, Boosting):
        raise ValueError(f"`boosting` must be a gpcompose.boosting.Boosting, got {type(algorithm).__name__}.")
    if joint_update_every is not None:
        algorithm = dataclasses.replace(algorithm, joint_update_every=joint_update_every)
    # Strongly typed in the data's dtype, so that a saved and reloaded state (which loses
    # weak types) reuses the compiled ask/tell.
    algorithm = jax.tree.map(lambda leaf: jnp.asarray(leaf).astype(X.dtype), algorithm)
    return _initialise(jnp.asarray(X), jnp.asarray(y), key, kernel, algorithm, options)


@eqx.filter_jit
def _initialise(X, y, key, kernel, algorithm: Boosting, options: BVBMCOptions) -> BVBMCState:
    num_initial, dimension = X.shape
    capacity = num_initial + options.budget
    inputs = jnp.concatenate([X, jnp.zeros((options.budget, dimension), X.dtype)])
    log_densities = jnp.concatenate([y, jnp.zeros((options.budget,), y.dtype)])
    evaluated = jnp.arange(capacity) < num_initial
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    run_key, joint_key = jax.random.split(key)
    shift, scale = output_scaling(log_densities, evaluated, options.scaling)
    scaled = jnp.where(evaluated, (log_densities - shift) / scale, 0.0)
    prior = fit_prior(initial_prior(inputs, scaled, evaluated, kernel, options), inputs, scaled, evaluated, options)
    posterior = raw_units_posterior(prior, inputs, log_densities, evaluated, shift, scale, options)

    centre = jnp.mean(X, axis=0)
    variance = jnp.maximum(jnp.var(X, axis=0), 1e-12)
    slots = options.max_components
    mixture = GaussianMixture.from_moments(
        jnp.ones((slots,), X.dtype),
        jnp.broadcast_to(centre, (slots, dimension)),
        jnp.broadcast_to(variance, (slots, dimension)),
        mask=jnp.arange(slots) < 1,
    )
    first = dataclasses.replace(algorithm, joint_steps=options.initial_joint_steps)
    boosting_state = first.joint_update(algorithm.init(posterior, mixture), joint_key)
    observations = posterior.observations
    noise = jnp.max(jnp.where(observations.mask, observations.noise_variance, 0.0))
    return BVBMCState(
        inputs=inputs,
        log_densities=log_densities,
        evaluated=evaluated,
        succeeded=evaluated,
        num_initial=jnp.asarray(num_initial, jnp.int32),
        num_evaluations=jnp.zeros((), jnp.int32),
        boosting=boosting_state,
        algorithm=algorithm,
        shift=shift,
        scale=scale,
        noise_variance=noise,
        key_data=jax.random.key_data(run_key),
        options=options,
    )


def acquisition(state: BVBMCState, index) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
    """x ↦ log a(x) + log regulariser(k̃(x)) for acquisition number `index` of
    `options.acquisitions`, in the normalised units of the reference code (§2.9)."""
    options = state.options
    functions = [LOG_BMC_ACQUISITIONS[name] for name in options.acquisitions]
    posterior = state.boosting.posterior
    mixture = state.boosting.mixture
    threshold = jnp.asarray(options.variance_threshold, state.inputs.dtype)

    def value(x):
        mean, variance = scaled_prediction(posterior, x, state.shift, state.scale)
        log_q = mixture.log_prob(x)
        chosen = jax.lax.switch(index, functions, mean, variance, log_q)
        return chosen + log_variance_regulariser(variance, threshold)

    return value


def acquisition_index(state: BVBMCState, key: PRNGKeyArray):
    """Which acquisition this iteration uses: cyclic (iteration mod n) or uniformly random."""
    count = len(state.options.acquisitions)
    if state.options.alternation == "cyclic":
        return state.num_evaluations % count
    return jax.random.randint(key, (), 0, count)


@public_jit()
def ask(state: BVBMCState, key: PRNGKeyArray) -> Float[Array, " D"]:
    """The next point to evaluate: the maximiser of this iteration's acquisition, from
    the best of `num_candidates` draws of q refined by a vmapped multi-start Adam search
    (Alg. 3 lines 8–9).

    With `options.search_in_box` [ours] the draws and the search are clipped to the box of
    the GP's training inputs. Without it, on heavy-tailed targets acquisitions drawn from
    a widened mixture land ever farther out, each widens the box that bounds the boosted
    components, and the mixture drifts off (Student-t toy D = 2: 2 of 10 seeds end with
    gsKL 2·10³ and 8·10⁶; with it all 10 lie in 0.07–0.12)."""
    options = state.options
    choice_key, candidate_key = jax.random.split(key)
    objective = acquisition(state, acquisition_index(state, choice_key))
    mixture = state.boosting.mixture
    candidates = mixture.sample(candidate_key, options.num_candidates)
    lower = upper = None
    if options.search_in_box:
        lower, upper = observed_box(state.boosting.posterior.observations)
        candidates = jnp.clip(candidates, lower[None, :], upper[None, :])
    values = jax.vmap(objective)(candidates)
    values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
    _, starts = jax.lax.top_k(values, options.num_search_starts)
    scale = jnp.sqrt(jnp.diag(mixture.covariance()))
    search = maximise_multistart(
        objective,
        candidates[starts],
        scale=scale,
        num_steps=options.search_steps,
        learning_rate=options.search_learning_rate,
        lower=lower,
        upper=upper,
    )
    return search.x


def _check_evaluation(state: BVBMCState, x, y):
    dtype = state.inputs.dtype
    x = jnp.asarray(x, dtype)
    y = jnp.asarray(y, dtype)
    if x.shape != (state.dimension,):
        raise ValueError(f"`x` must have shape ({state.dimension},), got shape {x.shape}.")
    if y.shape != ():
        raise ValueError(f"`y` must be a scalar, got shape {y.shape}.")
    return x, y


def _refit(state: BVBMCState) -> gp.ExactPosterior:
    """ML-II again on every successful evaluation (scaled with the initial shift/scale),
    warm-started at the current kernel (the raw-units kernel is scale² · k, a `Product`
    whose right factor is k); the prior mean is set again from all the data."""
    options = state.options
    mask = state.succeeded
    scaled = jnp.where(mask, (state.log_densities - state.shift) / state.scale, 0.0)
    kernel = state.boosting.posterior.kernel.right
    prior = fit_prior(initial_prior(state.inputs, scaled, mask, kernel, options), state.inputs, scaled, mask, options)
    return raw_units_posterior(prior, state.inputs, state.log_densities, mask, state.shift, state.scale, options)


def _record_and_boost(state: BVBMCState, x, y) -> BVBMCState:
    """Store one evaluation (failed ones too), append it to the GP by a rank-1 Cholesky
    extension (no refit unless `refit_every`), then one boosting step (Alg. 3 l. 10–15)."""
    options = state.options
    good = jnp.isfinite(y) & jnp.all(jnp.isfinite(x))
    slot = state.num_initial + state.num_evaluations
    slot = eqx.error_if(slot, slot >= state.capacity, "bvbmc.tell: the evaluation budget is exhausted.")
    safe_x = jnp.where(good, x, 0.0)
    safe_y = jnp.where(good, y, 0.0)
    posterior = jax.lax.cond(
        good,
        lambda p: gp.update(p, safe_x, safe_y, state.noise_variance),
        lambda p: p,
        state.boosting.posterior,
    )
    state = eqx.tree_at(
        lambda s: (s.inputs, s.log_densities, s.evaluated, s.succeeded, s.num_evaluations, s.boosting.posterior),
        state,
        (
            state.inputs.at[slot].set(safe_x),
            state.log_densities.at[slot].set(safe_y),
            state.evaluated.at[slot].set(True),
            state.succeeded.at[slot].set(good),
            state.num_evaluations + 1,
            posterior,
        ),
    )
    if options.refit_every > 0:
        refit = state.num_evaluations % options.refit_every == 0
        posterior = jax.lax.cond(refit, _refit, lambda s: s.boosting.posterior, state)
        state = eqx.tree_at(lambda s: s.boosting.posterior, state, posterior)
    key, step_key = jax.random.split(state.key)
    boosting_state, _ = state.algorithm.step(state.boosting, step_key)
    return eqx.tree_at(lambda s: (s.boosting, s.key_data), state, (boosting_state, jax.random.key_data(key)))


@public_jit()
def tell(state: BVBMCState, x: Float[ArrayLike, " D"], y: Float[ArrayLike, ""]) -> BVBMCState:
    """Record the evaluation y = log ḡ(x) (NaN/±inf marks a failed evaluation, which is
    kept but not used), append it to the GP, and run one boosting step."""
    x, y = _check_evaluation(state, x, y)
    return _record_and_boost(state, x, y)


@eqx.filter_jit
def run(log_density: Callable, state: BVBMCState, key: PRNGKeyArray) -> BVBMCState:
    """Spend the rest of the budget on a JAX-traceable `log_density` (x ↦ log ḡ(x)) in one
    compiled program of ask/evaluate/tell iterations. Vmaps over seeds:
    `jax.vmap(lambda k: bvbmc.run(f, bvbmc.init(X, y, key=k), k))(keys)`."""

    def iteration(state):
        x = ask(state, jax.random.fold_in(key, state.num_evaluations))
        return _record_and_boost(state, x, jnp.asarray(log_density(x), state.inputs.dtype))

    return jax.lax.while_loop(lambda s: s.num_evaluations < s.options.budget, iteration, state)


@eqx.filter_jit
def _elbo(state: BVBMCState):
    key = jax.random.fold_in(state.key, 0)
    return elbo(state.boosting.posterior, state.boosting.mixture, key, state.options.final_entropy_samples)


def result(state: BVBMCState) -> BVBMCResult:
    """The `BVBMCResult` of a (finished or unfinished) run; for one run, not a batch."""
    elbo_mean, elbo_sd = _elbo(state)
    succeeded = np.asarray(state.succeeded)
    X = jnp.asarray(np.asarray(state.inputs)[succeeded])
    y = jnp.asarray(np.asarray(state.log_densities)[succeeded])
    num_failed = int(np.sum(np.asarray(state.evaluated) & ~succeeded))
    return BVBMCResult(state.boosting.mixture, elbo_mean, elbo_sd, state.boosting.posterior, X, y, num_failed)


def fit(
    log_density: Callable,
    X0: Float[ArrayLike, "N D"],
    *,
    key: PRNGKeyArray,
    budget: int = 100,
    kernel: AbstractKernel | None = None,
    acquisitions: tuple[str, ...] = ("prop", "mmlt"),
    joint_update_every: int = 20,
    boosting: Boosting | None = None,
    options: BVBMCOptions | None = None,
    state: BVBMCState | None = None,
    callback: Callable[[BVBMCState], None] | None = None,
) -> BVBMCResult:
    """Boosted Variational Bayesian Monte Carlo (Naiff 2019, Alg. 3) of a black-box log
    density, from initial points `X0` (N, D) and `budget` further evaluations.

    `log_density(x)` takes one point (a NumPy array) and returns log ḡ(x); it is called
    from Python between the jitted `ask` and `tell`, so it need not be a JAX function.
    An exception or a NaN is recorded as a failed evaluation and the run goes on.
    `acquisitions` are alternated at random (names of `acquisition.LOG_BMC_ACQUISITIONS`:
    "us", "prop", "soft_prop", "mmlt", "mmlt_p"); `joint_update_every` sets the period of
    the joint update of all components. Pass a `state` (e.g. loaded with
    `eqx.tree_deserialise_leaves`) to resume a run; `callback(state)` is called after
    every evaluation. For a JAX-traceable target, `run` does the same in one program.
    """
    init_key, loop_key = jax.random.split(key)
    if state is None:
        X0 = np.asarray(X0)
        if X0.ndim != 2:
            raise ValueError(f"`X0` must have shape (num_points, dimension), got shape {X0.shape}.")
        y0 = np.array([call_black_box(log_density, x, description="bvbmc.fit: log_density") for x in X0])
        options = BVBMCOptions() if options is None else options
        options = dataclasses.replace(options, acquisitions=tuple(acquisitions))
        state = init(
            X0,
            y0,
            key=init_key,
            budget=budget,
            kernel=kernel,
            joint_update_every=joint_update_every,
            boosting=boosting,
            options=options,
        )
    while int(state.num_evaluations) < state.options.budget:
        x = ask(state, jax.random.fold_in(loop_key, int(state.num_evaluations)))
        state = tell(state, x, call_black_box(log_density, np.asarray(x), description="bvbmc.fit: log_density"))
        if callback is not None:
            callback(state)
    return result(state)
