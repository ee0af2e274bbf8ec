"""One SVBMC retraining: trim, shape the noise, fit the hyperparameters, select inducing
points, condition the sparse GP and (re-)optimise the variational mixture (Li, Clarté & Acerbi
2023, §3)."""

import functools
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .. import sparse
from .._noise_shaping import shaping_variance, total_noise_variance
from .._rare_cond import rare_cond
from ..active_learning import Evaluations, censor_failures, failure_value
from ..mixtures import VBMCMixture
from ..quadrature import elbo, maximize_elbo
from ._refit import Refit, condition_on_selected, exceeds_ceiling, refit_from_starts
from ._subset import stratified_kmeans_subset
from ._surrogate import Surrogate, fit_exact, initial_surrogate, plausible_box
from ._trimming import trim_level, trim_mask
from ._variational import Growth, build_up, initial_mixture, optimise_then_grow

if TYPE_CHECKING:
    from ._workflow import SVBMC


def censoring_level(state_like, options: "SVBMC") -> Float[Array, ""]:
    """The trimming level y⋆ = max_m (y_m − βσ_m) − η over the successful rows (App. B.1)."""
    inputs, log_densities, observation_variance, succeeded = state_like
    return trim_level(
        log_densities,
        jnp.sqrt(observation_variance),
        succeeded,
        options.trim_threshold_per_dimension * inputs.shape[1],
        beta=options.trim_beta,
    )


def training_rows(
    state_like, options: "SVBMC", num_initial, failed: Bool[Array, " C"] | None = None
) -> tuple[Bool[Array, " C"], Float[Array, " C"], Float[Array, " C"]]:
    """Rows the surrogate is trained on, the values it sees there and their total noise
    variance σ²_obs + σ²_shape(y_max − y) with θ_σ = 10D (App. B.3).

    Initial evaluations (rows before `num_initial`) far below the best are trimmed
    (η = 20D, β = 1.96, App. B.1). An active-phase evaluation that low is kept instead,
    its value raised to the trimming level y⋆ = max_m (y_m − βσ_m) − η [ours;
    `options.censor_active_evaluations`]: the acquisition asked for it because q has mass
    there, and dropping it can let a surrogate that is confidently high where the target is
    far lower keep q there for the rest of the run.
    The raised value says "at most y⋆ here" with the shaping noise of Δy = η, sd
    √(σ²_med + (λ_σ·10D)²) (θ_σ = 10D, η = 20D), while the true value, with shaping sd
    ≈ λ_σ Δy growing with its depth Δy, would barely move the surrogate.

    The `failed` rows (failed evaluations at finite inputs, `Evaluations.censored`) are
    trained on too, at the lowest value of the successful rows kept,
    ỹ = min_{n kept} y_n (`active_learning.censor_failures`), with the shaping noise of
    y_max − ỹ: the lowest value the fit keeps, which trimming and the censoring above hold
    at or above the trimming level (ỹ ≥ y⋆ − βσ_obs, and ỹ = y⋆ once an active evaluation
    has been censored there). A failure is thus read as "no higher than anything the
    surrogate is trained on", never as a value below what the surrogate can represent.
    """
    successful, values = _successful_training_rows(state_like, options, num_initial)
    keep = successful
    if failed is not None:
        values, keep = censor_failures(values, successful, failed)
    inputs, _, observation_variance, _ = state_like
    noise = total_noise_variance(
        values,
        observation_variance,
        keep,
        options.shaping_threshold_per_dimension * inputs.shape[1],
        minimum_variance=options.shaping_minimum_variance,
        median_variance=options.shaping_median_variance,
        slope=options.shaping_slope,
    )
    censored_noise = observation_variance + options.shaping_minimum_variance
    return keep, values, jnp.where(keep & ~successful, censored_noise, noise)


def _successful_training_rows(
    state_like, options: "SVBMC", num_initial
) -> tuple[Bool[Array, " C"], Float[Array, " C"]]:
    """The successful rows of `training_rows`, trimmed and censored, and their values."""
    inputs, log_densities, observation_variance, succeeded = state_like
    dimension = inputs.shape[1]
    keep = trim_mask(
        log_densities,
        jnp.sqrt(observation_variance),
        succeeded,
        options.trim_threshold_per_dimension * dimension,
        beta=options.trim_beta,
    )
    values = log_densities
    if options.censor_active_evaluations:
        active = succeeded & (jnp.arange(inputs.shape[0], dtype=jnp.int32) >= jnp.asarray(num_initial, jnp.int32))
        values = jnp.where(active, jnp.maximum(log_densities, censoring_level(state_like, options)), log_densities)
        keep = keep | active
    return keep, values


def new_point_value_and_noise(
    evaluations: Evaluations, options: "SVBMC", log_density, observation_variance, succeeded=True
):
    """(value, σ²_tot) of a new active-phase evaluation under the current training rows of
    `evaluations`: the value censored at the trimming level as in `training_rows`, or for a
    failed evaluation (`succeeded` False) the lowest value of the successful rows kept, and
    σ²_obs + σ²_shape(y_max − value)."""
    rows = (evaluations.inputs, evaluations.values, evaluations.noise_variance, evaluations.succeeded)
    if options.censor_active_evaluations:
        log_density = jnp.maximum(log_density, censoring_level(rows, options))
    kept, kept_values = _successful_training_rows(rows, options, evaluations.num_initial)
    log_density = jnp.where(succeeded, log_density, failure_value(kept_values, kept))
    # The best successful row is never trimmed (its ucb ≥ y ≥ every lcb), so y_max over the
    # training rows is the maximum over the successful rows.
    y_max = jnp.maximum(jnp.max(jnp.where(evaluations.succeeded, evaluations.values, -jnp.inf)), log_density)
    shaping = shaping_variance(
        y_max - log_density,
        options.shaping_threshold_per_dimension * evaluations.dimension,
        minimum_variance=options.shaping_minimum_variance,
        median_variance=options.shaping_median_variance,
        slope=options.shaping_slope,
    )
    shaping = jnp.where(succeeded, shaping, options.shaping_minimum_variance)
    return log_density, observation_variance + shaping


def peak_ceiling(log_densities: Float[Array, " C"], keep: Bool[Array, " C"], options: "SVBMC", dimension: int):
    """The refit guard's ceiling y_max + tol·D over the training rows (`_refit.exceeds_ceiling`)."""
    y_max = jnp.max(jnp.where(keep, log_densities, -jnp.inf))
    return y_max + options.peak_tolerance_per_dimension * dimension


class PeakCheck(NamedTuple):
    """`peak_check`'s output: whether the surrogate mean exceeds the ceiling at one of the
    draws of a mixture (q has found a mountain of the surrogate where the data do not
    reach), and the draw with the highest mean (the top of that mountain)."""

    peaked: Bool[Array, ""]
    top: Float[Array, " D"]


def peak_check(posterior: sparse.SparsePosterior, mixture: VBMCMixture, ceiling, key, options: "SVBMC") -> PeakCheck:
    """The refit guard's test (`_refit.exceeds_ceiling`) at `options.peak_check_samples`
    draws of `mixture`, with the highest-mean draw."""
    draws = mixture.sample(key, options.peak_check_samples)
    mean = sparse.predict_mean(posterior, draws)
    return PeakCheck(jnp.max(mean) > ceiling, draws[jnp.argmax(mean)])


class Previous(NamedTuple):
    """What an active-phase `retrain` starts from: the state's surrogate hyperparameters
    and mixture, and the mixture before that one (`SVBMCState.earlier_posterior`)."""

    surrogate: Surrogate
    mixture: VBMCMixture
    earlier_mixture: VBMCMixture


# Where a retraining's hyperparameters come from (`Retraining.hyperparameter_source`)
FITTED = 0  # an SGPR fit that stays below the ceiling (`_refit.refit_from_starts`)
UNFITTED_START = 1  # every fit peaked: the start with the higher bound, unfitted
LAST_ROUND = 2  # the new mixture found a mountain: the last round's hyperparameters (active phase)
KEPT = 3  # a round between refits (`SVBMC.refit_schedule`): the last round's hyperparameters, Z selected afresh


class Retraining(NamedTuple):
    """`retrain`'s output. `stuck`: the round kept one of the last two mixtures because every
    candidate peaked; `probes` are then the next round's first `ask`s
    (`SVBMC.ask`).
    `hyperparameter_source`: `FITTED`, `UNFITTED_START`, `LAST_ROUND` or `KEPT` (a
    diagnostic: a run whose rounds never fit leaves its surrogate as `init` made it)."""

    posterior: sparse.SparsePosterior
    mixture: VBMCMixture
    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    center: Float[Array, " D"]
    width: Float[Array, " D"]
    probes: Float[Array, "2 D"]
    stuck: Bool[Array, ""]
    hyperparameter_source: Int[Array, ""]


class _TrainingSet(NamedTuple):
    """The rows one retraining fits (`training_rows`): the inputs, their (censored) values,
    their total noise variances and the mask of the rows kept."""

    inputs: Float[Array, "C D"]
    log_densities: Float[Array, " C"]
    noise: Float[Array, " C"]
    keep: Bool[Array, " C"]


class _Context(NamedTuple):
    """What the mixture steps of one `retrain` share: the training rows, the high points'
    width and box (the components stay inside it), the refit guard's ceiling, and the keys
    of the peak checks and of the common-random-number ELBO comparisons."""

    rows: _TrainingSet
    options: "SVBMC"
    num_initial: int
    width: Float[Array, " D"]
    component_box: tuple[Float[Array, " D"], Float[Array, " D"]]
    ceiling: Float[Array, ""]
    peak_draws_key: PRNGKeyArray
    compare_key: PRNGKeyArray


def _high_points_spread(log_densities, keep, y_max, threshold) -> Float[Array, ""]:
    """The sd of the values of the kept rows within `threshold` of y_max: the scale of the
    starting hyperparameters' priors (`initial_surrogate`)."""
    high = keep & (log_densities >= y_max - threshold)
    num_high = jnp.sum(high.astype(log_densities.dtype))
    y_mean = jnp.sum(jnp.where(high, log_densities, 0.0)) / num_high
    return jnp.sqrt(jnp.sum(jnp.where(high, (log_densities - y_mean) ** 2, 0.0)) / num_high)


def _start_mixture(rows: _TrainingSet, log_density: Float[Array, " C"], options: "SVBMC") -> VBMCMixture:
    """The one-component mixture of `options.mixture_family` at the kept rows whose
    `log_density` lies within D + 2 of the highest (`initial_mixture`)."""
    return initial_mixture(
        rows.inputs,
        log_density,
        rows.keep,
        rows.inputs.shape[1] + 2.0,
        options.max_components,
        rotated=options.mixture_family == "rotated",
    )


def _hyperparameter_starts(
    rows: _TrainingSet, key, options: "SVBMC", high_points, *, num_initial: int, previous: Previous | None
) -> list[Surrogate]:
    """The starts of the sparse refit (Li, Clarté & Acerbi 2023, §3.3): the exact-GP MAP on a
    stratified k-means subset drawn with `key`, from `initial_surrogate` at initialisation
    or from the current hyperparameters in the active phase, which are then the second start.
    `high_points` is (centre, width, y_max, y_scale) of the high points.

    At initialisation the MAP is restarted with the lengthscales shortened by
    `options.exact_fit_lengthscale_factors` (`fit_exact`): from `initial_surrogate`, a guess
    from the data's spread, one start can end at a degenerate optimum. In the active phase it
    starts from the current hyperparameters alone [ours]: fitted to nearly the same
    evaluations, they start next to the optimum, which in our runs the shortened starts
    reached too, at two to three times the cost."""
    centre, width, y_max, y_scale = high_points
    threshold = options.shaping_threshold_per_dimension * rows.inputs.shape[1]
    subset_size = min(options.subset_size, num_initial)
    subset, subset_mask = stratified_kmeans_subset(
        key, rows.inputs, rows.log_densities, rows.keep, size=subset_size, num_strata=options.num_strata
    )
    if previous is None:
        start = initial_surrogate(centre, width, y_max, y_scale, threshold, options.quadratic_scale_cap)
    else:
        start = previous.surrogate
    exact = fit_exact(
        start,
        rows.inputs[subset],
        rows.log_densities[subset],
        rows.noise[subset],
        subset_mask,
        max_steps=options.exact_fit_steps,
        lengthscale_factors=options.exact_fit_lengthscale_factors if previous is None else (1.0,),
    )
    return [exact] if previous is None else [exact, previous.surrogate]


def _guarded_refit(
    rows: _TrainingSet,
    starts,
    key,
    ceiling,
    options: "SVBMC",
    *,
    num_initial: int,
    previous: Previous | None,
    fit_mask: Bool[Array, " C"],
):
    """`refit_from_starts` with the refit guard's check points (`_check_points`). The
    hyperparameters are fitted to the `fit_mask` rows."""
    check_points, check_mask = _check_points(rows, key, options, previous)
    return refit_from_starts(
        starts,
        rows.inputs,
        rows.log_densities,
        rows.noise,
        rows.keep,
        options,
        num_initial=num_initial,
        check_points=check_points,
        check_mask=check_mask,
        ceiling=ceiling,
        fit_mask=fit_mask,
    )


def _check_points(rows: _TrainingSet, key, options: "SVBMC", previous: Previous | None):
    """(points, mask) where the refit guard checks a sparse GP's mean: the training inputs
    and draws (from fold_in(`key`, 1)) of the current mixture, or at initialisation of the
    Gaussian of the highest points."""
    if previous is None:
        reference = _start_mixture(rows, rows.log_densities, options)
    else:
        reference = previous.mixture
    draws = reference.sample(jax.random.fold_in(key, 1), options.peak_check_samples)
    points = jnp.concatenate([rows.inputs, draws])
    return points, jnp.concatenate([rows.keep, jnp.ones((options.peak_check_samples,), bool)])


def _last_round_posterior(rows: _TrainingSet, options: "SVBMC", previous: Previous, num_initial: int):
    """The sparse GP of the last round's hyperparameters on inducing points selected afresh
    under them (`condition_on_selected`), so that the next round's points have free slots."""
    return condition_on_selected(
        previous.surrogate, rows.inputs, rows.log_densities, rows.noise, rows.keep, options, num_initial=num_initial
    )


def _round_refit(full_refit, rows: _TrainingSet, key, ceiling, options: "SVBMC", previous, num_initial, refit_now):
    """(refit, whether it fitted, last_round_posterior) of one retraining: `full_refit()` at
    initialisation or where `refit_now` is a Python True; otherwise the last round's
    hyperparameters (`_last_round_posterior`), unless `refit_now` holds or that GP's mean
    exceeds the ceiling at the refit guard's check points (`_check_points`), in which case
    `full_refit()` (`gpcompose._rare_cond.rare_cond`: it runs only then, and under `vmap`
    only when some member needs it). `last_round_posterior()` gives `_last_round_posterior`
    for the fall-back of `_active_phase`, computed once."""
    if previous is None or refit_now is True:
        return full_refit(), True, lambda: _last_round_posterior(rows, options, previous, num_initial)
    kept = _last_round_posterior(rows, options, previous, num_initial)
    check_points, check_mask = _check_points(rows, key, options, previous)
    refitted = jnp.asarray(refit_now, bool) | exceeds_ceiling(kept, check_points, ceiling, check_mask)
    refit = rare_cond(refitted, full_refit, lambda: Refit(kept, jnp.zeros((), bool), kept))
    return refit, refitted, lambda: kept


def _ascent(context: _Context, posterior, num_steps):
    """(mixture, key) ↦ the mixture after `num_steps` Adam steps on the ELBO of `posterior`
    (`maximize_elbo`), its components kept inside the high points' box."""
    options = context.options
    return functools.partial(
        maximize_elbo,
        posterior,
        width=context.width,
        num_steps=num_steps,
        learning_rate=options.learning_rate,
        num_entropy_samples=options.entropy_samples(),
        bounds=context.component_box,
    )


def _scored(context: _Context, posterior):
    """mixture ↦ (ELBO, BQ sd) on `posterior`, with common random numbers, so that
    mixtures are compared without the entropy's Monte Carlo noise between them."""
    return lambda mixture: elbo(posterior, mixture, context.compare_key, context.options.final_entropy_samples)


def _score(context: _Context, posterior):
    """mixture ↦ the ELBO of `_scored`."""
    return lambda mixture: _scored(context, posterior)(mixture)[0]


def _growth(context: _Context, posterior, num_steps) -> Growth:
    """A growth stage on `posterior`: components are added at the training inputs whose
    surrogate mean is within D + 2 of the highest (the candidates of `initial_mixture`)."""
    rows = context.rows
    surrogate_mean = sparse.predict_mean(posterior, rows.inputs)
    top = jnp.max(jnp.where(rows.keep, surrogate_mean, -jnp.inf))
    eligible = rows.keep & (surrogate_mean >= top - (rows.inputs.shape[1] + 2.0))
    return Growth(
        rows.inputs, surrogate_mean, eligible, _ascent(context, posterior, num_steps), _score(context, posterior)
    )


def _check(context: _Context, posterior, mixture) -> PeakCheck:
    """The second check [ours]: whether the mean of `posterior` exceeds the ceiling at draws
    of `mixture` (`peak_check`)."""
    return peak_check(posterior, mixture, context.ceiling, context.peak_draws_key, context.options)


def _build(context: _Context, posterior, key) -> VBMCMixture:
    """The mixture of `options.mixture_family` built up on `posterior` from its one-component
    start (`build_up`, Li, Clarté & Acerbi 2023, §3.3)."""
    options = context.options
    sites = _growth(context, posterior, options.buildup_steps)
    start = _start_mixture(context.rows, sites.log_density, options)
    return build_up(start, key, sites, tolerance=options.buildup_tolerance)


def _initial_phase(context: _Context, refit, key, no_probes):
    """(posterior, mixture, probes, stuck, source) at initialisation: the mixture built up on
    the refit's posterior, and, if its draws find the mean above the ceiling (second check
    [ours], as in `_active_phase`), built up again on the subset MAP's unfitted posterior
    (unless the refit already fell back to it: the build would repeat). The two attempts are
    one `lax.while_loop`, so that the program holds one copy of `_build`."""

    def attempt(carry):
        count, _, _ = carry
        chosen = jax.tree_util.tree_map(
            lambda fitted, unfitted: jnp.where(count == 0, fitted, unfitted), refit.posterior, refit.unfitted
        )
        return count + 1, chosen, _build(context, chosen, key)

    def again(carry):
        count, posterior, mixture = carry
        return (count == 0) | ((count == 1) & _check(context, posterior, mixture).peaked & ~refit.fell_back)

    # the loop's first mixture is a placeholder of the built-up structure; its value never matters
    placeholder = _start_mixture(context.rows, context.rows.log_densities, context.options)
    attempts, posterior, mixture = jax.lax.while_loop(again, attempt, (jnp.asarray(0), refit.posterior, placeholder))
    stuck = jnp.asarray(False)
    source = jnp.where(refit.fell_back | (attempts == 2), UNFITTED_START, FITTED)
    return posterior, mixture, no_probes, stuck, source


def _better_of_last_two(context: _Context, previous: Previous, posterior) -> VBMCMixture:
    """Of the last two mixtures, the one with the higher ELBO on `posterior` (common random
    numbers, `_scored`)."""
    last_two = jax.tree_util.tree_map(
        lambda last, earlier: jnp.stack([last, earlier]), previous.mixture, previous.earlier_mixture
    )
    last_two_elbos, _ = jax.vmap(_scored(context, posterior))(last_two)
    return jax.tree_util.tree_map(lambda two: two[jnp.argmax(last_two_elbos)], last_two)


def _active_phase(context: _Context, refit, refitted, last_round_posterior, previous: Previous, key, no_probes):
    """(posterior, mixture, probes, stuck, source) of an active round.

    The warm-started mixture is re-optimised, then one growth stage is tried while
    K < K_max [ours; the paper leaves the K policy of the loop open]: a build-up that
    stopped early on the initial surrogate can grow later. Second check [ours]: the ELBO
    step can move the mixture onto a peak that the draws of the old mixture did not see;
    if the new mixture's draws find the mean above the ceiling, the round falls back: the
    last round's hyperparameters on inducing points selected afresh
    (`last_round_posterior()`, so that the next round's points have free slots again), and
    the last mixture re-optimised on that sparse GP with the same key. If that too peaks,
    the round is stuck: of the last two mixtures the one with the higher ELBO on that
    sparse GP stays (the last one can be the one that went onto the mountain). The next
    round's acquisitions follow that mixture and would never reach either mountain, so its
    first two points are the mountains' tops (the highest-mean draws of the rejected
    mixtures): their values, far below, pull the mountains down. Keeping the last mixture
    unconditionally would freeze it (a mixture with mass on a spurious mode would make
    every later round fall back), and keeping the last sparse GP (with the round's points
    added by rank-1 updates) would freeze the surrogate once the free slots are full.

    The round and its fall-back are one `lax.while_loop` of up to two attempts (the
    fall-back's growth stage has no component, so it is skipped), so that the program
    holds one copy of the mixture's optimisation and of the check."""
    optimise_key, growth_key = jax.random.split(key)
    options = context.options
    keys = jnp.stack([optimise_key, growth_key])
    # the growth stage doubles K, capped by the free slots
    growth_count = jnp.sum(previous.mixture.mask, dtype=jnp.int32)

    def attempt(carry):
        count, _, _, _, first_top = carry
        posterior = rare_cond(count > 0, last_round_posterior, lambda: refit.posterior)
        growth_counts = jnp.where(count == 0, growth_count, 0)[None]
        sites = _growth(context, posterior, options.round_steps)
        mixture = optimise_then_grow(previous.mixture, keys, growth_counts, sites, tolerance=options.buildup_tolerance)
        check = _check(context, posterior, mixture)
        return count + 1, posterior, mixture, check, jnp.where(count == 0, check.top, first_top)

    def again(carry):
        count, _, _, check, _ = carry
        return (count == 0) | ((count == 1) & check.peaked)

    # the loop's first check and top are placeholders that the first attempt replaces
    top = jnp.zeros_like(no_probes[0])
    start = (jnp.asarray(0, jnp.int32), refit.posterior, previous.mixture, PeakCheck(jnp.asarray(False), top), top)
    attempts, posterior, mixture, check, first_top = jax.lax.while_loop(again, attempt, start)
    fell_back = attempts == 2
    stuck = fell_back & check.peaked
    better = functools.partial(_better_of_last_two, context, previous, posterior)
    mixture = rare_cond(stuck, lambda _: better(), lambda current: current, mixture)
    probes = jnp.where(fell_back, jnp.stack([first_top, check.top]), no_probes)
    fitted_source = jnp.where(refit.fell_back, UNFITTED_START, FITTED)
    source = jnp.where(fell_back, LAST_ROUND, jnp.where(refitted, fitted_source, KEPT))
    return posterior, mixture, probes, stuck, source


def retrain(
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    observation_variance: Float[Array, " C"],
    succeeded: Bool[Array, " C"],
    key,
    options: "SVBMC",
    *,
    num_initial: int,
    previous: Previous | None,
    failed: Bool[Array, " C"] | None = None,
    refit_hyperparameters: bool | Bool[ArrayLike, ""] = True,
):
    """The full SVBMC training pass on `training_rows` (with the `failed` rows censored);
    `previous` is None at initialisation (build-up from
    one component) and the state's `Previous` in the active phase (warm-started mixture,
    one growth stage while K < K_max). The sparse GP comes from
    `refit_from_starts`: the refit from the subset MAP, or in the active phase, if its mean
    rises above the ceiling at the training inputs or at draws of the current mixture,
    the refit from the current hyperparameters. An active round with
    `refit_hyperparameters` False (`SVBMC.refit_schedule`) keeps the current
    hyperparameters instead, unless they peak (`_round_refit`). The draws of the new mixture
    are checked too; if the mean exceeds the ceiling there, initialisation builds the
    mixture up again on the subset MAP's unfitted posterior, and an active round keeps
    the previous hyperparameters (on inducing points selected afresh) and re-optimises
    the previous mixture on that sparse GP (if that peaks too, keeping the one of the last
    two mixtures with the higher ELBO there, and then probing the tops of both rejected
    mixtures' mountains in the next round). Under `vmap` the refit, the growth stage and
    the fall-back run only when some member takes them (`gpcompose._rare_cond.rare_cond`),
    and a vmapped initialisation builds the mixture up a second time for every seed once
    one seed needs it (the two attempts are one `lax.while_loop`). The components stay
    inside the high points' box.

    **Returns:** a `Retraining`.
    """
    dimension = inputs.shape[1]
    subset_key, mixture_key, elbo_key = jax.random.split(key, 3)
    keep, log_densities, noise = training_rows(
        (inputs, log_densities, observation_variance, succeeded), options, num_initial, failed
    )
    rows = _TrainingSet(inputs, log_densities, noise, keep)
    threshold = options.shaping_threshold_per_dimension * dimension
    centre, width = plausible_box(inputs, log_densities, keep, threshold)
    y_max = jnp.max(jnp.where(keep, log_densities, -jnp.inf))
    ceiling = peak_ceiling(log_densities, keep, options, dimension)
    y_scale = _high_points_spread(log_densities, keep, y_max, threshold)
    high_points = (centre, width, y_max, y_scale)
    # the hyperparameters are fitted to the successful rows only: a censored failure's value is
    # imputed, not measured, and would otherwise set the lengthscales and scales
    successful = _TrainingSet(inputs, log_densities, noise, keep & succeeded)

    def full_refit():
        starts = _hyperparameter_starts(
            successful, subset_key, options, high_points, num_initial=num_initial, previous=previous
        )
        return _guarded_refit(
            rows, starts, key, ceiling, options, num_initial=num_initial, previous=previous, fit_mask=successful.keep
        )

    refit, refitted, last_round_posterior = _round_refit(
        full_refit, rows, key, ceiling, options, previous, num_initial, refit_hyperparameters
    )
    # the components stay inside the high points' box [ours; VBMC: the training inputs' box,
    # which for a post-process set of optimiser runs reaches far past the posterior]
    component_box = (centre - 0.5 * width, centre + 0.5 * width)
    peak_draws_key = jax.random.fold_in(key, 2)
    no_probes = jnp.zeros((2, dimension), inputs.dtype)
    compare_key = jax.random.fold_in(key, 3)
    context = _Context(rows, options, num_initial, width, component_box, ceiling, peak_draws_key, compare_key)
    if previous is None:
        posterior, mixture, probes, stuck, source = _initial_phase(context, refit, mixture_key, no_probes)
    else:
        posterior, mixture, probes, stuck, source = _active_phase(
            context, refit, refitted, last_round_posterior, previous, mixture_key, no_probes
        )
    elbo_mean, elbo_sd = elbo(posterior, mixture, elbo_key, options.final_entropy_samples)
    source = jnp.asarray(source, jnp.int32)
    return Retraining(posterior, mixture, elbo_mean, elbo_sd, centre, width, probes, stuck, source)
