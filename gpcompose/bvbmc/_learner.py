"""BVBMC as an active learner (Naiff 2019, thesis Alg. 3): `init`/`ask`/`tell`/`result` on
fixed-capacity buffers, driven by `gpcompose.run_black_box` or `gpcompose.run_traceable`."""

import dataclasses
import warnings
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray

from .. import gp
from .._jit import public_jit
from .._noise_shaping import shaping_variance
from .._observations import observed_box
from .._validation import as_floating, check_key
from ..acquisition import log_variance_regularizer, maximize_from_candidates
from ..active_learning import (
    AbstractActiveLearner,
    Evaluations,
    buffer_rows,
    censor_failures,
    failure_value,
    repeats_failure,
    require_single_run,
    update_key,
)
from ..boosting import Boosting, BoostingInfo
from ..kernels import AbstractKernel
from ..mixtures import GaussianMixture
from ..quadrature import elbo
from ._acquisitions import AbstractLogBMCAcquisition, MomentMatchedLogTransform, Prospective
from ._alternation import AbstractAlternation, RandomAlternation
from ._prior_mean import AbstractPriorMean, ConstantPriorMean
from ._scaling import AbstractOutputScaling, Normalize
from ._state import BVBMCAskInfo, BVBMCResult, BVBMCState
from ._surrogate import fit_prior, initial_prior, raw_units_posterior, scaled_prediction


def _check_initial(X, y, traced: bool):
    X = as_floating(X, "X") if traced else np.asarray(as_floating(X, "X"))
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (num_points, dimension), got shape {X.shape}.")
    dtype = X.dtype
    y = as_floating(y, "y").astype(dtype) if traced else np.asarray(as_floating(y, "y"), dtype)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},) to match X {X.shape}, got shape {y.shape}.")
    if traced:
        return X.astype(dtype), y
    usable = np.all(np.isfinite(X), axis=1) & np.isfinite(y)
    if not np.all(usable):
        warnings.warn(
            f"BVBMC.init: dropped {np.sum(~usable)} initial evaluations with NaN or infinite values; "
            f"{np.sum(usable)} remain.",
            RuntimeWarning,
            stacklevel=3,
        )
    if np.sum(usable) < 2:
        raise ValueError(
            f"BVBMC needs at least 2 finite initial evaluations (rows of `X` and `y` without NaN or ±inf), "
            f"got {np.sum(usable)}."
        )
    return X[usable].astype(dtype), y[usable]


def _check_evaluation(state: BVBMCState, x, y):
    dtype = state.evaluations.values.dtype
    x = jnp.asarray(x, dtype)
    y = jnp.asarray(y, dtype)
    dimension = state.evaluations.dimension
    if x.shape != (dimension,):
        raise ValueError(f"`x` must have shape ({dimension},), got shape {x.shape}.")
    if y.shape != ():
        raise ValueError(f"`y` must be a scalar, got shape {y.shape}.")
    return x, y


class BVBMC(AbstractActiveLearner[BVBMCState]):
    """Boosted Variational Bayesian Monte Carlo (Naiff 2019, thesis Alg. 3) of an expensive
    log density log ḡ: a GP surrogate of log ḡ, a Gaussian mixture built by boosting against
    its Bayesian-quadrature ELBO (`boosting`), and active learning of new evaluation points.

    `init` fits the surrogate and the first component; each `ask` maximises one of the
    `acquisitions`; each `tell` appends the evaluation to the GP (rank-1) and runs one
    boosting step. A failed evaluation (NaN, ±inf, or the target raised) at x is appended as
    an observation at the lowest successful value, ỹ(x) = min_n y_n, a censored observation
    (`active_learning.censor_failures`), so that q and the acquisitions move away from it.
    The fields are the method's choices and constants; defaults are the thesis's where it
    gives one, [ours] otherwise. Static fields recompile when changed.
    """

    # Mixture slots: the most components q can hold at once [ours].
    max_components: int = eqx.field(static=True, default=30)
    # The (shift, scale) of the outputs before the GP fit; `Normalize` (mean, sd) is the thesis's default,
    # `ZeroMax` (max, 1) its alternative (§6.1.1.2).
    scaling: AbstractOutputScaling = Normalize()
    # The GP's prior mean; the default is the thesis's fixed constant C below the data (eq. 6.11, §6.1.2),
    # `NegativeQuadraticPriorMean` a fitted negative quadratic [ours].
    mean: AbstractPriorMean = ConstantPriorMean()
    # Noise variance of the GP in normalised units: a jitter, the evaluations being exact (thesis §6.1.1.2).
    jitter: float = eqx.field(static=True, default=1e-4)
    # BFGS steps of the ML-II fit of the kernel [ours; the thesis's code uses Adam].
    fit_steps: int = eqx.field(static=True, default=200)
    # 0: fit the kernel once, at `init` (the thesis); n > 0: ML-II again after every n-th evaluation.
    refit_every: int = eqx.field(static=True, default=0)
    # The acquisitions alternated between iterations; PROP and MMLT as in the thesis's experiments (§7.2).
    acquisitions: tuple[AbstractLogBMCAcquisition, ...] = (Prospective(), MomentMatchedLogTransform())
    # How each iteration picks one of `acquisitions`: uniformly at random by default, as in the thesis's
    # experiments (§7.2), or in turn with `CyclicAlternation`.
    alternation: AbstractAlternation = RandomAlternation()
    # v_reg of the variance regulariser multiplied into every acquisition (thesis §7.2 toy problems).
    variance_threshold: float = eqx.field(static=True, default=0.1)
    # Draws of q that seed the acquisition search (the thesis's code's "sampling").
    num_candidates: int = eqx.field(static=True, default=100)
    # The best candidates refined by Adam [ours; the code refines one].
    num_search_starts: int = eqx.field(static=True, default=4)
    # Adam steps of each refinement [ours; the code takes 100 from one start].
    search_steps: int = eqx.field(static=True, default=30)
    # Adam's learning rate in the acquisition search (the thesis's code).
    search_learning_rate: float = eqx.field(static=True, default=0.1)
    # Keep candidates and search in the box of the GP's training inputs [ours], so that box, which also bounds
    # the boosted components, never grows past the initial design's (see `ask`).
    search_in_box: bool = eqx.field(static=True, default=True)
    # Adam steps of the ELBO fit of the first component q₀ (thesis §6.1.1.3).
    initial_joint_steps: int = eqx.field(static=True, default=300)
    # Monte Carlo draws of the entropy in the result's ELBO [ours].
    final_entropy_samples: int = eqx.field(static=True, default=8192)
    # The boosting step run after every evaluation (its own constants: `gpcompose.boosting.Boosting`).
    boosting: Boosting = eqx.field(default_factory=Boosting)
    # Starting kernel of ML-II; None: a product Matérn-5/2 (thesis eq. 6.12) scaled to the data.
    kernel: AbstractKernel | None = None

    def __check_init__(self):
        for name in ("max_components", "fit_steps", "num_candidates", "num_search_starts"):
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")
        if self.refit_every < 0:
            raise ValueError(f"`refit_every` must be ≥ 0 (0: never), got {self.refit_every}.")
        choices = (
            ("scaling", AbstractOutputScaling, "`bvbmc.Normalize()` or `bvbmc.ZeroMax()`"),
            ("mean", AbstractPriorMean, "`bvbmc.ConstantPriorMean(...)` or `bvbmc.NegativeQuadraticPriorMean()`"),
            ("alternation", AbstractAlternation, "`bvbmc.RandomAlternation()` or `bvbmc.CyclicAlternation()`"),
        )
        for name, base, examples in choices:
            if not isinstance(getattr(self, name), base):
                raise ValueError(
                    f"`{name}` must be a bvbmc.{base.__name__} (e.g. {examples}), got {getattr(self, name)!r}."
                )
        acquisitions = self.acquisitions
        if not isinstance(acquisitions, tuple) or not acquisitions:
            raise ValueError(f"`acquisitions` must be a non-empty tuple of acquisitions, got {acquisitions!r}.")
        if not all(isinstance(function, AbstractLogBMCAcquisition) for function in acquisitions):
            raise ValueError(
                "`acquisitions` must hold BVBMC acquisitions (e.g. `bvbmc.Prospective()`, "
                f"`bvbmc.MomentMatchedLogTransform()`), got {acquisitions!r}."
            )
        if self.num_search_starts > self.num_candidates:
            raise ValueError(
                f"`num_search_starts` ({self.num_search_starts}) exceeds `num_candidates` ({self.num_candidates})."
            )
        if not isinstance(self.boosting, Boosting):
            raise ValueError(f"`boosting` must be a gpcompose.boosting.Boosting, got {type(self.boosting).__name__}.")
        if self.kernel is not None and not isinstance(self.kernel, AbstractKernel):
            raise ValueError(f"`kernel` must be an AbstractKernel or None, got {type(self.kernel).__name__}.")

    def boosting_step(self, dtype) -> Boosting:
        """`boosting` with its numbers in the data's `dtype` (they are weakly typed or float64
        as given; a reloaded learner's are strongly typed)."""
        return jax.tree.map(lambda leaf: jnp.asarray(leaf).astype(dtype), self.boosting)

    def with_budget(self, state: BVBMCState, budget: int) -> BVBMCState:
        """The same run with `budget` evaluations (boosting steps) in all: the evaluation and
        GP buffers resized, the mixture and the fits kept."""
        state = super().with_budget(state, budget)
        surrogate = state.boosting.surrogate.with_capacity(state.evaluations.capacity)
        return eqx.tree_at(lambda s: s.boosting.surrogate, state, surrogate)

    def init(
        self, X: Float[ArrayLike, "N D"], y: Float[ArrayLike, " N"], *, budget: int, key: PRNGKeyArray
    ) -> BVBMCState:
        """Start BVBMC from initial evaluations y_n = log ḡ(X_n) (Alg. 3 lines 1–6).

        Scales the outputs (`scaling`), starts the prior `mean` (eq. 6.11 by default), fits
        the kernel by ML-II once, conditions the GP (in raw units) and fits the first component
        q₀ = N(μ₀, Σ₀) by maximising the surrogate ELBO from the mean and variance of the
        initial points (§6.1.1.3, option 2), with `key`.

        - `X` (N, D), `y` (N,): the evaluations; rows with NaN/inf are dropped with a
          `RuntimeWarning` that counts them (at least 2 must remain).
        - `budget`: the number of evaluations the run makes after `init` (boosting steps).

        Runs under `jax.vmap` over `key` (with `X`, `y` fixed or traced; traced rows are
        not checked for NaN).
        """
        traced = any(isinstance(value, jax.core.Tracer) for value in (X, y))
        X, y = _check_initial(X, y, traced)
        free_rows = buffer_rows(budget)  # checks `budget`
        check_key(key)
        return _initialise(self, jnp.asarray(X), jnp.asarray(y), key, jnp.asarray(budget, jnp.int32), free_rows)

    def acquisition(self, state: BVBMCState, index) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
        """x ↦ log a(x) + log regulariser(k̃(x)) for acquisition number `index` of
        `acquisitions`, in the normalised units of the thesis's code (§2.9)."""
        surrogate = state.boosting.surrogate
        mixture = state.boosting.mixture
        threshold = jnp.asarray(self.variance_threshold, state.evaluations.values.dtype)
        functions = [function.__call__ for function in self.acquisitions]

        def value(x):
            mean, variance = scaled_prediction(surrogate, x, state.shift, state.scale)
            log_q = mixture.log_prob(x)
            chosen = jax.lax.switch(index, functions, mean, variance, log_q)
            return chosen + log_variance_regularizer(variance, threshold)

        return value

    def acquisition_index(self, state: BVBMCState, key: PRNGKeyArray):
        """Which acquisition this iteration uses: the index `alternation` picks, with `key`."""
        return self.alternation(len(self.acquisitions), state.evaluations.num_evaluations, key)

    @public_jit()
    def ask(self, state: BVBMCState, key: PRNGKeyArray) -> tuple[Float[Array, " D"], BVBMCAskInfo]:
        """The next point to evaluate: the maximiser of this iteration's acquisition, from the
        best `num_search_starts` of `num_candidates` draws of q, refined by a vmapped
        multi-start Adam search (Alg. 3 lines 8–9).

        With `search_in_box` [ours] the draws and the search are clipped to the box of the
        GP's training inputs. Without it, on heavy-tailed targets, points drawn from a widened
        mixture land ever farther out, each widens the box that bounds the boosted components,
        and the mixture can drift away from the target.

        A failed evaluation's input is never asked again: the GP holds it at the lowest
        successful value, and should the search still return it
        (`active_learning.repeats_failure`), the first draw of q is asked instead.
        """
        choice_key, candidate_key = jax.random.split(key)
        index = self.acquisition_index(state, choice_key)
        objective = self.acquisition(state, index)
        mixture = state.boosting.mixture
        candidates = mixture.sample(candidate_key, self.num_candidates)
        lower = upper = None
        if self.search_in_box:
            lower, upper = observed_box(state.boosting.surrogate.observations)
            candidates = jnp.clip(candidates, lower[None, :], upper[None, :])
        search = maximize_from_candidates(
            objective,
            candidates,
            num_starts=self.num_search_starts,
            scale=jnp.sqrt(jnp.diag(mixture.covariance())),
            num_steps=self.search_steps,
            learning_rate=self.search_learning_rate,
            lower=lower,
            upper=upper,
        )
        evaluations = state.evaluations
        repeated = repeats_failure(search.x, evaluations.inputs, evaluations.censored)
        x = jnp.where(repeated, candidates[0], search.x)
        return x, BVBMCAskInfo(jnp.asarray(index, jnp.int32), search.value)

    @public_jit()
    def record(
        self,
        state: BVBMCState,
        x: Float[ArrayLike, " D"],
        y: Float[ArrayLike, ""],
        noise_sd: Float[ArrayLike, ""] | None = None,
    ) -> tuple[BVBMCState, Bool[Array, ""]]:
        """Store the evaluation y = log ḡ(x) and append it to the GP by a rank-1 Cholesky
        extension (Alg. 3 line 10). NaN/±inf marks a failed evaluation: it is kept with its
        input and appended as a censored observation at the lowest successful value,
        ỹ = min_n y_n (`active_learning.censor_failures`), so that the surrogate is low there,
        with the noise variance jitter + σ²_shape(y_max − ỹ) of noise shaping (Li, Clarté &
        Acerbi 2023, eq. S17, θ = 10 D; `svbmc.shaping_variance`): an exact GP made to
        interpolate a drop of many nats beside the mode overshoots elsewhere, and boosting
        then fits the overshoot.

        BVBMC models exact evaluations: a `noise_sd` raises `ValueError`."""
        if noise_sd is not None:
            raise ValueError(
                "BVBMC models exact evaluations of the log density: `noise_sd` must be None "
                "(the GP's noise is the fixed `jitter`)."
            )
        x, y = _check_evaluation(state, x, y)
        evaluations = state.evaluations
        located = jnp.all(jnp.isfinite(x))
        good = jnp.isfinite(y) & located
        safe_x = jnp.where(located, x, 0.0)
        value = jnp.where(good, y, failure_value(evaluations.values, evaluations.succeeded))
        best = jnp.max(jnp.where(evaluations.succeeded, evaluations.values, -jnp.inf))
        shaped = state.noise_variance + shaping_variance(best - value, 10.0 * x.shape[-1])
        noise = jnp.where(good, state.noise_variance, shaped)
        surrogate = jax.lax.cond(
            located,
            lambda p: gp.update(p, safe_x, value, noise),
            lambda p: p,
            state.boosting.surrogate,
        )
        evaluations = evaluations.record(x, y, state.noise_variance, good)
        state = eqx.tree_at(lambda s: (s.evaluations, s.boosting.surrogate), state, (evaluations, surrogate))
        return state, good

    @eqx.filter_jit
    def update(self, state: BVBMCState, key: PRNGKeyArray) -> tuple[BVBMCState, BoostingInfo]:
        """ML-II again if this is a `refit_every`-th evaluation, then one boosting step with
        `key` (Alg. 3 lines 11–15). `tell` calls it after every evaluation with a key derived
        from that evaluation (`gpcompose.active_learning.update_key`)."""
        if self.refit_every > 0:
            refit = state.evaluations.num_evaluations % self.refit_every == 0
            surrogate = jax.lax.cond(refit, lambda s: refit_surrogate(self, s), lambda s: s.boosting.surrogate, state)
            state = eqx.tree_at(lambda s: s.boosting.surrogate, state, surrogate)
        boosting_state, info = self.boosting_step(state.evaluations.values.dtype).step(state.boosting, key)
        return eqx.tree_at(lambda s: s.boosting, state, boosting_state), info

    def progress_summary(self, state: BVBMCState) -> dict[str, Array | tuple[Array, Array]]:
        """The ELBO ± sd that `result` would report now, the mixture's active components and
        the failed evaluations, for the progress display."""
        components = jnp.sum(state.boosting.mixture.mask, dtype=jnp.int32)
        return {"ELBO": _elbo(self, state), "components": components, **super().progress_summary(state)}

    def result(self, state: BVBMCState) -> BVBMCResult:
        """The `BVBMCResult` of a (finished or unfinished) run; for one run, not a batch.

        The entropy term of the ELBO is a Monte Carlo estimate (`final_entropy_samples`
        draws); its key is derived from the evaluations (`update_key` folded with 1), so the
        result is a deterministic function of the state."""
        require_single_run(state, "bvbmc")
        elbo_mean, elbo_sd = _elbo(self, state)
        evaluations = state.evaluations
        X, y = evaluations.succeeded_rows(evaluations.inputs, evaluations.values)
        boosting = state.boosting
        return BVBMCResult(boosting.mixture, elbo_mean, elbo_sd, boosting.surrogate, X, y, int(evaluations.num_failed))


@eqx.filter_jit
def _initialise(learner: BVBMC, X, y, key, budget, free_rows: int) -> BVBMCState:
    num_initial, dimension = X.shape
    inputs = jnp.concatenate([X, jnp.zeros((free_rows, dimension), X.dtype)])
    log_densities = jnp.concatenate([y, jnp.zeros((free_rows,), y.dtype)])
    evaluated = jnp.arange(num_initial + free_rows) < num_initial
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    _, joint_key = jax.random.split(key)
    shift, scale = learner.scaling(log_densities, evaluated)
    scaled = jnp.where(evaluated, (log_densities - shift) / scale, 0.0)
    prior = initial_prior(inputs, scaled, evaluated, learner.kernel, learner)
    prior = fit_prior(prior, inputs, scaled, evaluated, learner)
    surrogate = raw_units_posterior(prior, inputs, log_densities, evaluated, shift, scale, learner)

    slots = learner.max_components
    mixture = GaussianMixture.from_moments(
        jnp.ones((slots,), X.dtype),
        jnp.broadcast_to(jnp.mean(X, axis=0), (slots, dimension)),
        jnp.broadcast_to(jnp.maximum(jnp.var(X, axis=0), 1e-12), (slots, dimension)),
        mask=jnp.arange(slots) < 1,
    )
    algorithm = learner.boosting_step(X.dtype)
    first = dataclasses.replace(algorithm, joint_steps=learner.initial_joint_steps)
    boosting_state = first.joint_update(algorithm.init(surrogate, mixture), joint_key)
    observations = surrogate.observations
    noise = jnp.max(jnp.where(observations.mask, observations.noise_variance, 0.0))
    noise_rows = jnp.where(evaluated, noise, 1.0)
    evaluations = Evaluations(inputs, log_densities, noise_rows, evaluated, evaluated, budget, num_initial)
    return BVBMCState(evaluations, boosting_state, shift, scale, noise)


def refit_surrogate(learner: BVBMC, state: BVBMCState) -> gp.ExactPosterior:
    """ML-II again on every evaluation (scaled with the initial shift/scale), failed ones
    censored at the lowest successful value (`active_learning.censor_failures`), warm-started
    at the current kernel (the raw-units kernel is scale² · k, a `Product` whose right factor
    is k); the prior mean is set again from all the data."""
    evaluations = state.evaluations
    values, mask = censor_failures(evaluations.values, evaluations.succeeded, evaluations.censored)
    inputs = evaluations.inputs
    scaled = jnp.where(mask, (values - state.shift) / state.scale, 0.0)
    kernel = state.boosting.surrogate.kernel.right
    prior = fit_prior(initial_prior(inputs, scaled, mask, kernel, learner), inputs, scaled, mask, learner)
    return raw_units_posterior(prior, inputs, values, mask, state.shift, state.scale, learner)


@eqx.filter_jit
def _elbo(learner: BVBMC, state: BVBMCState):
    key = jax.random.fold_in(update_key(state.evaluations), 1)
    return elbo(state.boosting.surrogate, state.boosting.mixture, key, learner.final_entropy_samples)
