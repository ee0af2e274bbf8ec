"""One BO proposal (document Alg. 2 body) in the unit cube: standardise, refit, and
maximise the selected acquisition; BES falls back to EI when no sample is accepted."""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ..acquisition import (
    BoundedEntropySearchCache,
    MultistartResult,
    bounded_entropy_search,
    log_expected_improvement,
    log_expected_regret,
    max_value_entropy_search,
    maximise_on_box,
    upper_confidence_bound,
)
from ..bounded import Bounds, accepted, log_weights, square_root_offset
from ..sampling import sample_extrema
from ._state import BOState, split_key
from ._surrogate import Surrogate, fit_surrogate


def standardisation(state: BOState) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Mean and sd of the successful outputs (sd 1 when fewer than 2 or all equal)."""
    mask = state.succeeded
    count = jnp.sum(mask).astype(state.targets.dtype)
    location = jnp.sum(jnp.where(mask, state.targets, 0.0)) / jnp.maximum(count, 1.0)
    variance = jnp.sum(jnp.where(mask, (state.targets - location) ** 2, 0.0)) / jnp.maximum(count, 1.0)
    scale = jnp.where((count >= 2) & (variance > 1e-24), jnp.sqrt(jnp.maximum(variance, 1e-24)), 1.0)
    return location, scale


def standardised_bounds(state: BOState, location, scale) -> Bounds | None:
    """The bounds in standardised units; a missing η takes the document's default
    η₊² = 0.02 d, η₋² = 0.5 d (Sec. 5)."""
    if state.f_plus is None and state.f_minus is None:
        return None
    dtype = state.targets.dtype
    options = state.options

    def eta(given, squared_per_dimension):
        if given is None:
            return jnp.asarray(math.sqrt(squared_per_dimension * state.dimension), dtype)
        return given / scale

    def shift(bound):
        return None if bound is None else (bound - location) / scale

    return Bounds(
        shift(state.f_plus),
        shift(state.f_minus),
        None if state.f_plus is None else eta(state.eta_plus, options.eta_plus_squared_per_dimension),
        None if state.f_minus is None else eta(state.eta_minus, options.eta_minus_squared_per_dimension),
    )


def _uses_square_root(state: BOState) -> bool:
    options = state.options
    return options.acquisition in ("bes", "erm") and options.square_root and state.f_plus is not None


def _maximise(state: BOState, key, objective, extra) -> MultistartResult:
    options = state.options
    unit_lower = jnp.zeros(state.dimension, state.inputs.dtype)
    unit_upper = jnp.ones(state.dimension, state.inputs.dtype)
    return maximise_on_box(
        key,
        objective,
        unit_lower,
        unit_upper,
        num_candidates=options.num_candidates,
        num_starts=options.num_starts,
        num_steps=options.search_steps,
        extra_candidates=extra,
    )


def _expected_improvement(surrogate: Surrogate, best) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
    def objective(u):
        mean, variance = surrogate.predict(u[None, :])
        return log_expected_improvement(mean[0], variance[0], best)

    return objective


def _extrema(state: BOState, surrogate: Surrogate, key, num_samples: int):
    options = state.options
    sample_key, search_key = jax.random.split(key)
    samples = surrogate.samples(sample_key, num_samples, options.num_features)
    unit_lower = jnp.zeros(state.dimension, state.inputs.dtype)
    return sample_extrema(
        search_key,
        samples,
        unit_lower,
        unit_lower + 1.0,
        num_candidates=options.num_candidates,
        num_starts=options.num_starts,
        num_steps=options.search_steps,
    )


def propose(state: BOState, key: PRNGKeyArray) -> tuple[Float[Array, " D"], dict]:
    """The next point in the unit cube and diagnostics (`accepted`: the number of accepted
    samples for BES, else −1; `bes_value`: the BES maximum, NaN for other acquisitions;
    `num_clamped`: SRGP observations above c)."""
    options = state.options
    fit_key, sample_key, search_key = split_key(key, 3)
    if options.acquisition == "random":
        no_info = {"accepted": jnp.asarray(-1, jnp.int32), "num_clamped": jnp.zeros((), jnp.int32)}
        no_info["bes_value"] = jnp.asarray(jnp.nan, state.inputs.dtype)
        return jax.random.uniform(search_key, (state.dimension,), state.inputs.dtype), no_info
    location, scale = standardisation(state)
    y = jnp.where(state.succeeded, (state.targets - location) / scale, 0.0)
    bounds = standardised_bounds(state, location, scale)
    offset = square_root_offset(bounds) if _uses_square_root(state) else None
    surrogate = fit_surrogate(state.inputs, y, state.succeeded, offset, options.fit_steps, options.square_root_centre)
    best = jnp.max(jnp.where(state.succeeded, y, -jnp.inf))
    observed = state.inputs
    num_clamped = getattr(surrogate.posterior, "num_clamped", jnp.zeros((), jnp.int32))
    num_accepted = jnp.asarray(-1, jnp.int32)
    bes_value = jnp.asarray(jnp.nan, y.dtype)
    kind = options.acquisition
    if kind == "ei":
        x = _maximise(state, search_key, _expected_improvement(surrogate, best), observed).x
    elif kind == "ucb":
        beta = jnp.log(jnp.maximum(jnp.sum(state.succeeded), 1).astype(y.dtype))  # β_t = log t (predecessor code)

        def objective(u):
            mean, variance = surrogate.predict(u[None, :])
            return upper_confidence_bound(mean[0], variance[0], beta)

        x = _maximise(state, search_key, objective, observed).x
    elif kind == "mes":
        extrema = _extrema(state, surrogate, sample_key, options.num_samples)

        def objective(u):
            mean, variance = surrogate.predict(u[None, :])
            return max_value_entropy_search(mean[0], variance[0], extrema.value_max)

        x = _maximise(state, search_key, objective, jnp.concatenate([observed, extrema.x_max])).x
    elif kind == "ts":
        x = _extrema(state, surrogate, sample_key, 1).x_max[0]
    elif kind == "erm":
        optimum = bounds.f_plus

        def objective(u):
            mean, variance = surrogate.predict(u[None, :])
            return -log_expected_regret(mean[0], variance[0], optimum)

        x = _maximise(state, search_key, objective, observed).x
    else:  # "bes"
        extrema = _extrema(state, surrogate, sample_key, options.num_samples)
        weights = log_weights(bounds, extrema)
        is_accepted = accepted(bounds, extrema, rule=options.acceptance_rule)
        mean, variance = surrogate.predict(extrema.x_max)
        cache = BoundedEntropySearchCache(extrema.x_max, extrema.value_max, weights, mean, variance)

        def entropy_search(u):
            return bounded_entropy_search(cache, surrogate.lookahead_variance(extrema.x_max, u))

        candidates = jnp.concatenate([observed, extrema.x_max])
        found = _maximise(state, search_key, entropy_search, candidates)
        # Fall back to EI when no sample is accepted (App. C.2) and also [ours] when BES is
        # nowhere positive: the closed form (1/M) Σ p_x log(p_x/p) is not a full KL and is
        # ≤ 0 when every g_m⁺ is far from μ(x_m⁺), and then its argmax is a point that
        # changes nothing (often an already evaluated one).
        informative = jnp.any(is_accepted) & (found.value > 0)
        x = jax.lax.cond(
            informative,
            lambda: found.x,
            lambda: _maximise(state, search_key, _expected_improvement(surrogate, best), observed).x,
        )
        bes_value = found.value
        num_accepted = jnp.sum(is_accepted).astype(jnp.int32)
    return x, {"accepted": num_accepted, "num_clamped": num_clamped, "bes_value": bes_value}
