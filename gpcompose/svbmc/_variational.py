"""The SVBMC variational posterior: initialisation, the growth stage (add components,
optimise, keep if the ELBO rises) and the build-up that repeats it until the ELBO stops
changing (Li, Clarté & Acerbi 2023, §3.3, App. A.5)."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._linalg import cholesky
from .._rare_cond import rare_cond
from .._select import select_tree
from ..mixtures import VBMCMixture


def elbo_gain_z(
    mean: Float[Array, ""], sd: Float[Array, ""], other_mean: Float[Array, ""], other_sd: Float[Array, ""]
) -> Float[Array, ""]:
    """How far an ELBO lies above another in combined Bayesian-quadrature sds [ours]:
    (mean − other_mean)/√(sd² + other_sd²), the rule by which SVBMC keeps a whitened fit
    (`fit_and_whiten`); a denominator of 0 is floored at the smallest positive number."""
    combined_sd = jnp.maximum(jnp.sqrt(sd**2 + other_sd**2), jnp.finfo(sd.dtype).tiny)
    return (mean - other_mean) / combined_sd


def initial_mixture(
    X: Float[Array, "C D"],
    log_density: Float[Array, " C"],
    mask: Bool[Array, " C"],
    threshold: float | Float[Array, ""],
    max_components: int,
    *,
    rotated: bool,
) -> VBMCMixture:
    """One component at the mean and spread of the points whose surrogate log density is
    within `threshold` of the highest (other slots inactive): S = diag(sd) of those points,
    or with `rotated` the Cholesky factor of their covariance (S Sᵀ = the covariance, so
    the component starts with their correlations)."""
    top = jnp.max(jnp.where(mask, log_density, -jnp.inf))
    high = (mask & (log_density >= top - threshold)).astype(X.dtype)
    count = jnp.sum(high)
    centre = high @ X / count
    centred = X - centre[None, :]
    variance = high @ centred**2 / count
    floor = 1e-6 * jnp.max(variance) + 1e-12
    dimension = X.shape[1]
    if rotated:
        covariance = (high[:, None] * centred).T @ centred / count + floor * jnp.eye(dimension, dtype=X.dtype)
        lower = cholesky(covariance).lower
        lambdas = jnp.diagonal(lower)
        rows, columns = jnp.tril_indices(dimension, -1)
        offdiagonal = (lower / lambdas[:, None])[rows, columns]
    else:
        lambdas = jnp.sqrt(jnp.maximum(variance, floor))
        offdiagonal = None
    return VBMCMixture(
        logits=jnp.zeros((max_components,), X.dtype),
        means=jnp.zeros((max_components, dimension), X.dtype).at[0].set(centre),
        log_sigma=jnp.zeros((max_components,), X.dtype),
        log_lambda=jnp.log(lambdas),
        mask=jnp.zeros((max_components,), bool).at[0].set(True),
        lambda_offdiagonal=offdiagonal,
    )


def add_components(
    mixture: VBMCMixture,
    count: Array,
    X: Float[Array, "C D"],
    log_density: Float[Array, " C"],
    eligible: Bool[Array, " C"],
) -> VBMCMixture:
    """Add `count` components, one at a time, each at the eligible point where the
    surrogate most exceeds the mixture (argmax f̄(x) − log q(x)), with the mean scale
    of the current components and weight 1/(K + 1) [ours; Li et al. 2023 do not say
    where new components go]. Stops early when the mixture has no free slot."""

    def add_one(_, current):
        gap = jnp.where(eligible, log_density - current.log_prob(X), -jnp.inf)
        best = jnp.argmax(gap)
        active = current.mask.astype(X.dtype)
        sigma = jnp.exp(active @ current.log_sigma / jnp.sum(active))
        weight = 1.0 / (jnp.sum(active) + 1.0)
        return jax.lax.cond(
            jnp.isfinite(gap[best]), lambda m: m.add_component_if_room(weight, X[best], sigma), lambda m: m, current
        )

    return jax.lax.fori_loop(0, count, add_one, mixture)


def stage_sizes(max_components: int) -> list[int]:
    """Components added per build-up stage: K doubles (1, 2, 4, …) up to K_max."""
    sizes, total = [], 1
    while total < max_components:
        added = min(total, max_components - total)
        sizes.append(added)
        total += added
    return sizes


class Growth(NamedTuple):
    """What a growth stage needs: the sites where components are added (training inputs
    `X`, the surrogate's `log_density` there, the `eligible` rows), `optimise(mixture,
    key)` (Adam on the ELBO) and `score(mixture)` (the ELBO, with common random numbers)."""

    X: Float[Array, "C D"]
    log_density: Float[Array, " C"]
    eligible: Bool[Array, " C"]
    optimise: Callable[[VBMCMixture, PRNGKeyArray], VBMCMixture]
    score: Callable[[VBMCMixture], Float[Array, ""]]


def grow(
    mixture: VBMCMixture, mixture_score: Float[Array, ""], count: Array, key: PRNGKeyArray, growth: Growth
) -> tuple[VBMCMixture, Float[Array, ""], Float[Array, ""]]:
    """One growth stage: add `count` components (`add_components`), optimise, and keep
    the grown mixture if its score beats `mixture_score`. Returns (kept mixture, its
    score, the grown mixture's gain)."""
    added = add_components(mixture, count, growth.X, growth.log_density, growth.eligible)
    grown = growth.optimise(added, key)
    grown_score = growth.score(grown)
    accept = grown_score > mixture_score
    kept = select_tree(accept, grown, mixture)
    return kept, jnp.maximum(grown_score, mixture_score), grown_score - mixture_score


def optimise_then_grow(
    mixture: VBMCMixture,
    keys: PRNGKeyArray,
    growth_counts: Int[Array, " S"],
    growth: Growth,
    *,
    tolerance: float,
) -> VBMCMixture:
    """Stage 0 optimises `mixture` with `keys[0]` and keeps the result unless its score is NaN
    or −∞; stage j ≥ 1 is a growth stage (`grow`) of `growth_counts[j − 1]` components with
    `keys[j]` (S + 1 keys), skipped where that count is 0. The stages stop once one changes
    the score by less than `tolerance` (whatever its sign) or the mixture has no free slot.

    The stages are one `lax.scan`, stage 0 a growth stage of no component against a score of
    −∞ [ours], so that the program holds one copy of the optimiser and of the score; under
    `vmap` a stage runs while some member has not stopped (`gpcompose._rare_cond.rare_cond`).
    """
    dtype = mixture.means.dtype

    def stage(carry, inputs):
        current, current_score, done = carry
        index, count, stage_key = inputs

        def grow_stage(current):
            return grow(current, current_score, count, stage_key, growth)

        def skip(current):
            return current, current_score, jnp.zeros_like(current_score)

        runs = ~done & ((index == 0) | (count > 0))
        current, current_score, gain = rare_cond(runs, grow_stage, skip, current)
        done = done | (jnp.abs(gain) < tolerance) | jnp.all(current.mask)
        return (current, current_score, done), None

    start = (mixture, jnp.full((), -jnp.inf, dtype), jnp.asarray(False))
    counts = jnp.concatenate([jnp.zeros((1,), growth_counts.dtype), growth_counts])
    indices = jnp.arange(counts.shape[0])
    (mixture, _, _), _ = jax.lax.scan(stage, start, (indices, counts, keys))
    return mixture


def build_up(mixture: VBMCMixture, key: PRNGKeyArray, growth: Growth, *, tolerance: float) -> VBMCMixture:
    """Grow and optimise the mixture until a stage changes the ELBO by less than
    `tolerance` or K = K_max (Li, Clarté & Acerbi 2023, §3.3: "until the change in KL falls below a
    threshold"; ΔKL = −ΔELBO for a fixed target). The mixture is optimised first; stage j
    then adds 2^j components (K doubles while the stages are accepted; `grow`). A stage that
    lowers the ELBO is discarded; if it lowered it by more than `tolerance` the next stage
    starts again from the kept mixture [ours]: that is a failed optimisation, not
    convergence, and stopping there could leave a single component on a multimodal target.
    A change within ±`tolerance` stops the build-up whatever its sign, so that rounding
    cannot decide whether it goes on (`optimise_then_grow`)."""
    optimise_key, stages_key = jax.random.split(key)
    sizes = stage_sizes(mixture.num_components)
    keys = jnp.concatenate([optimise_key[None], jax.random.split(stages_key, len(sizes))])
    return optimise_then_grow(mixture, keys, jnp.asarray(sizes, jnp.int32), growth, tolerance=tolerance)
