"""Variational whitening of the SVBMC inference space (VBMC, Acerbi 2020; Li, Clarté & Acerbi
2023, App. A.5, describe it as background and leave its use in SVBMC unstated)."""

import functools
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._linalg import cholesky, solve_triangular
from .._placeholder import zeros_like_output
from .._rare_cond import rare_cond
from .._select import select_tree
from ..mixtures import VBMCMixture
from ..sparse import SparsePosterior
from ..transforms import WhitenedTransform
from ._surrogate import Surrogate, sparse_objective
from ._training import peak_ceiling, peak_check, retrain, training_rows
from ._variational import elbo_gain_z, initial_mixture

if TYPE_CHECKING:
    from ._workflow import SVBMC


def whitening_of(mixture: VBMCMixture) -> tuple[Float[Array, " D"], Float[Array, "D D"], Bool[Array, ""]]:
    """(m, L, ok): the mixture's mean and the Cholesky factor of its covariance (with a
    jitter of 1e-10 times the mean variance), and whether L is finite at that jitter
    (`_linalg.cholesky` escalating it further counts as a failure)."""
    covariance = mixture.covariance()
    jitter = 1e-10 * jnp.mean(jnp.diag(covariance))
    factor = cholesky(covariance + jitter * jnp.eye(covariance.shape[0], dtype=covariance.dtype))
    ok = factor.succeeded & (factor.jitter == 0) & jnp.all(jnp.diag(factor.lower) > 0)
    return mixture.mean(), factor.lower, ok


def highest_points_gaussian(
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    observation_variance: Float[Array, " C"],
    succeeded: Bool[Array, " C"],
    options: "SVBMC",
    *,
    num_initial: int,
) -> VBMCMixture:
    """One full-covariance component at the mean and covariance of the highest training
    rows (`training_rows`): those within D + 2 of y_max, or the 10·D highest where fewer
    lie there (a covariance from a handful of points would blow the space up along the
    directions they miss) [ours]. For a posterior of correlated shape the top points of a
    chain or an optimiser's late steps carry its correlations."""
    keep, values, _ = training_rows((inputs, log_densities, observation_variance, succeeded), options, num_initial)
    dimension = inputs.shape[1]
    ranked = jnp.sort(jnp.where(keep, values, -jnp.inf))
    y_max = ranked[-1]
    floor_value = ranked[-min(10 * dimension, ranked.shape[0])]  # −inf where fewer rows are kept
    # the margin keeps the floor's row in the band: top − (top − y_floor) can round below y_floor
    threshold = jnp.maximum(dimension + 2.0, (y_max - floor_value) * (1.0 + 1e-9))
    return initial_mixture(inputs, values, keep, threshold, options.max_components, rotated=True)


def surrogate_score(posterior: SparsePosterior, inputs, log_densities, noise, keep):
    """`sparse_objective` of a fitted sparse GP on the training rows `keep` with total noise `noise`."""
    surrogate = Surrogate(posterior.kernel, posterior.mean)
    return sparse_objective(
        surrogate, inputs, log_densities, noise, keep, posterior.inducing_inputs, posterior.inducing_mask
    )


def keeps_whitening(valid, score_gain, elbo_drop_z, new_peaks, old_peaks, max_drop_z) -> Bool[Array, ""]:
    """Whether a whitening pass (`fit_and_whiten`) keeps the whitened fit: it is `valid`
    (finite factor and ELBO), its score is higher (`score_gain` > 0), its ELBO is not
    significantly lower (`elbo_drop_z`, the drop in combined Bayesian-quadrature sds,
    ≤ `max_drop_z`) and its mixture does not peak (`peak_check`) unless the fit kept
    so far peaks too."""
    return valid & (score_gain > 0) & (elbo_drop_z <= max_drop_z) & (old_peaks | ~new_peaks)


def correlations_within(mixture: VBMCMixture, threshold: float) -> Bool[Array, ""]:
    """Whether every correlation of q is at most `threshold` in absolute value,
    |Σ_ij| ≤ t √(Σ_ii Σ_jj) for i ≠ j (no division, so a zero placeholder mixture gives True)."""
    covariance = mixture.covariance()
    variances = jnp.diag(covariance)
    bound = threshold * jnp.sqrt(variances[:, None] * variances[None, :])
    off_diagonal = ~jnp.eye(covariance.shape[0], dtype=bool)
    return jnp.all(jnp.where(off_diagonal, jnp.abs(covariance) <= bound, True))


def whiten_by(
    whitening: tuple[Float[Array, " D"], Float[Array, "D D"], Bool[Array, ""]],
    space: WhitenedTransform,
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    succeeded: Bool[Array, " C"],
):
    """(space', inputs', log_densities', ok): the evaluations in the space whitened by
    `whitening` = (m, L, ok), as `whitening_of` gives it for a q.

    With m, L L^T = E_q[w], Cov_q[w] in the current space w, the new coordinates are
    w' = L⁻¹(w − m); every point moves there and its log density gains log|det L|, so
    fits in both spaces estimate the same log Z. The composed transform maps x to w'
    through u = m₀ + L₀ w = (m₀ + L₀ m) + (L₀ L) w'. Where L is not finite (`ok` false)
    the identity is used."""
    mean, factor, ok = whitening
    factor = jnp.where(ok, factor, jnp.eye(factor.shape[0], dtype=factor.dtype))
    mean = jnp.where(ok, mean, 0.0)
    new_space = WhitenedTransform(space.bounded, space.unwhiten(mean), space.factor @ factor)
    whitened = solve_triangular(factor, (inputs - mean[None]).T).T
    new_inputs = jnp.where(succeeded[:, None], whitened, inputs)  # the other rows are masked out everywhere
    log_det = jnp.sum(jnp.log(jnp.diag(factor)))
    new_log_densities = jnp.where(succeeded, log_densities + log_det, log_densities)
    return new_space, new_inputs, new_log_densities, ok


def whitened_fit_is_better(
    fit: tuple,
    whitened: tuple,
    observation_variance: Float[Array, " C"],
    succeeded: Bool[Array, " C"],
    key,
    options: "SVBMC",
    *,
    num_initial: int,
) -> Bool[Array, ""]:
    """Whether a whitening pass keeps its fit (`keeps_whitening`). `fit` is (inputs,
    log_densities, `retrain` output) in the current space, `whitened` is (inputs',
    log_densities', `retrain` output, ok) in the whitened one.

    The whitened fit is kept if it explains the evaluations better — the higher collapsed
    SGPR bound + log hyperprior (`sparse_objective`, the score by which Li, Clarté & Acerbi
    2023, §3.3, compare hyperparameters), the same data under two input bases, as trimming
    and noise shaping see only differences of y — unless its ELBO is lower by more than two
    combined Bayesian-quadrature sds, (old − new)/√(sd² + sd'²) > 2
    (`options.whitening_max_elbo_drop`), or its mixture peaks where the first's does not.

    VBMC (Acerbi 2020) keeps a whitening if the ELBO rises. That rule can keep surrogates
    that are confidently wrong in the posterior's mass, because their ELBO overestimates
    log Z within its BQ sd while their SGPR bound is far lower. The score alone can keep a
    whitened surrogate too smooth to grow q on (long lengthscales, a build-up that stops at
    K = 1), which the ELBO-drop test rejects. A whitened fit whose own mixture finds the
    surrogate mean above the refit guard's ceiling y_max + D (`peak_check`) is not kept
    unless the first fit's does too: a better bound says that the surrogate explains the
    evaluations, not that it stays low where there are none, and a whitened quadratic mean
    can peak far above y_max off the data, with q on that peak and an ELBO far above log Z
    [ours].
    """
    inputs, log_densities, old = fit
    new_inputs, new_log_densities, new, ok = whitened
    # one set of training rows and noises serves both: y moved by a constant, which they do not see
    keep, values, noise = training_rows((inputs, log_densities, observation_variance, succeeded), options, num_initial)
    new_values = values + (new_log_densities - log_densities)
    old_score = surrogate_score(old[0], inputs, values, noise, keep)
    new_score = surrogate_score(new[0], new_inputs, new_values, noise, keep)
    peak_key = jax.random.fold_in(key, 4)
    dimension = inputs.shape[1]
    old_peaks = peak_check(old[0], old[1], peak_ceiling(values, keep, options, dimension), peak_key, options).peaked
    new_peaks = peak_check(new[0], new[1], peak_ceiling(new_values, keep, options, dimension), peak_key, options).peaked
    return keeps_whitening(
        ok & jnp.isfinite(new[2]),
        new_score - old_score,
        elbo_gain_z(old[2], old[3], new[2], new[3]),
        new_peaks,
        old_peaks,
        options.whitening_max_elbo_drop,
    )


def _initial_fit(inputs, log_densities, key, *, observation_variance, succeeded, options: "SVBMC", num_initial: int):
    """`retrain` at initialisation (no previous fit) of the evaluations in one space."""
    return retrain(
        inputs,
        log_densities,
        observation_variance,
        succeeded,
        key,
        options,
        num_initial=num_initial,
        previous=None,
    )


def _pass_keys(key, num_passes: int):
    """The keys of the 1 + P fits of `fit_and_whiten`: `key` for the first fit,
    fold_in(key, 1) for pass 1 and split(fold_in(key, 5), P − 1) for the others."""
    more_keys = jax.random.split(jax.random.fold_in(key, 5), num_passes - 1)
    return jnp.concatenate([key[None], jax.random.fold_in(key, 1)[None], more_keys])


def _start_whitening(
    inputs, log_densities, observation_variance, succeeded, options: "SVBMC", *, num_initial: int
) -> tuple[Float[Array, " D"], Float[Array, "D D"], Bool[Array, ""]]:
    """(m, L, ok) of the first fit's space: the Gaussian of the highest training rows
    (`highest_points_gaussian`), or the identity if `options.highest_points_whitening` is off.

    Why the first fit is not in the given space [ours]: the surrogate's mean is an
    axis-aligned negative quadratic, and on a correlated posterior the quadratic that fits
    the data has the conditional curvatures, ω_d ≈ 1/√Λ_dd, far narrower than the marginal
    sds, so it falls far below the data along the posterior's ridges and the GP needs a
    large σ_f to lift it; between the data such a GP builds mountains, q goes onto one,
    and no q-whitened pass recovers. In the space whitened by the top points the
    quadratic's axes follow the posterior's. Starting in the given space and moving to the
    top points' space only when the first q peaks (`peak_check`) is not enough: on a
    strongly correlated posterior a first fit in the given space can overestimate log Z
    with a small BQ sd, not peak, and still explain the evaluations far worse (a much lower
    SGPR score)."""
    if options.highest_points_whitening:
        return whitening_of(
            highest_points_gaussian(
                inputs, log_densities, observation_variance, succeeded, options, num_initial=num_initial
            )
        )
    return (
        jnp.zeros(inputs.shape[1], inputs.dtype),
        jnp.eye(inputs.shape[1], dtype=inputs.dtype),
        jnp.asarray(True),
    )


def _one_pass(fit_in, start, observation_variance, succeeded, options: "SVBMC", num_initial: int, carry, pass_inputs):
    """One pass of `fit_and_whiten`: the evaluations whitened by `start` (pass 0) or by the q
    of the fit kept so far (`whiten_by`), refitted with `fit_in`, and the new fit kept if this
    is pass 0 or it is better (`whitened_fit_is_better`); returns the new carry. The pass-0
    branches are `lax.cond`s on an unbatched flag, so they stay branches under `vmap`."""
    pass_key, pass_index = pass_inputs
    first = pass_index == 0
    space, inputs, log_densities, fit, _ = carry
    new_space, new_inputs, new_log_densities, ok = jax.lax.cond(
        first,
        lambda: whiten_by(start, space, inputs, log_densities, succeeded),
        lambda: whiten_by(whitening_of(fit[1]), space, inputs, log_densities, succeeded),
    )
    new_fit = fit_in(new_inputs, new_log_densities, pass_key)
    better = jax.lax.cond(
        first,
        lambda: jnp.asarray(True),
        lambda: whitened_fit_is_better(
            (inputs, log_densities, fit),
            (new_inputs, new_log_densities, new_fit, ok),
            observation_variance,
            succeeded,
            pass_key,
            options,
            num_initial=num_initial,
        ),
    )
    return select_tree(better, (new_space, new_inputs, new_log_densities, new_fit, pass_index), carry)


def _pass_unless_uncorrelated(one_pass, threshold: float, carry, pass_inputs):
    """`one_pass` (`_one_pass`), run at pass 0 and then while the q of the fit kept so far has a
    correlation above `threshold` (`correlations_within`); otherwise the carry unchanged. Under
    `vmap` the pass runs while some member needs it (`gpcompose._rare_cond.rare_cond`)."""
    _, pass_index = pass_inputs
    fit = carry[3]
    needed = (pass_index == 0) | ~correlations_within(fit[1], threshold)
    return rare_cond(needed, lambda state: one_pass(state, pass_inputs), lambda state: state, carry), None


def fit_and_whiten(
    space: WhitenedTransform,
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    observation_variance: Float[Array, " C"],
    succeeded: Bool[Array, " C"],
    key,
    options: "SVBMC",
    *,
    num_initial: int,
):
    """The initial fit. Without `options.whitening`: `retrain` in `space`. With it: `retrain`
    in the start space — `space` whitened by `_start_whitening` — then up to
    `options.whitening_passes` passes, each a refit from scratch in the space whitened by
    the q of the fit kept so far (`whiten_by`), kept if it is better
    (`whitened_fit_is_better`). The passes stop once every correlation of that q is at most
    `options.whitening_correlation_threshold` (`correlations_within`) [ours]: whitening by it
    would then do little more than shift and rescale the axes, which the ARD kernel and the
    axis-aligned quadratic mean and mixture represent as they are, so another pass would
    refit nearly the same problem with other random numbers. VBMC's implementation treats
    correlations of q below 0.05 as none when it whitens (PyVBMC's `warp_roto_corr_thresh`).

    The first fit and the passes are one `lax.scan` over 1 + P passes
    (`_pass_unless_uncorrelated`) [ours], pass 0 fitting in the start space and always kept,
    so that the program holds one copy of `retrain` (its first carry is a placeholder of
    zeros that pass 0 replaces unread).
    Keys: `_pass_keys`.

    **Returns:** (space, inputs, log_densities, fit, kept_pass) of the kept fit, fit being
    `retrain`'s output and kept_pass its pass (0 the start space, 1 … P the q-whitened
    passes; −1 without `options.whitening`).
    """
    fit_in = functools.partial(
        _initial_fit,
        observation_variance=observation_variance,
        succeeded=succeeded,
        options=options,
        num_initial=num_initial,
    )
    if not options.whitening:
        return space, inputs, log_densities, fit_in(inputs, log_densities, key), jnp.asarray(-1, jnp.int32)
    keys = _pass_keys(key, options.whitening_passes)
    pass_indices = jnp.arange(1 + options.whitening_passes, dtype=jnp.int32)
    start = _start_whitening(inputs, log_densities, observation_variance, succeeded, options, num_initial=num_initial)
    one_pass = functools.partial(_one_pass, fit_in, start, observation_variance, succeeded, options, num_initial)
    step = functools.partial(_pass_unless_uncorrelated, one_pass, options.whitening_correlation_threshold)
    placeholder = zeros_like_output(fit_in, inputs, log_densities, key)
    initial = (space, inputs, log_densities, placeholder, jnp.asarray(0, jnp.int32))
    kept, _ = jax.lax.scan(step, initial, (keys, pass_indices))
    return kept
