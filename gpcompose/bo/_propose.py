"""One BO proposal (Nguyen, Deisenroth & Osborne 2021, Alg. 2 body) in the unit cube:
standardise, refit the surrogate, and let the acquisition choose the point."""

import math
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._standardise import location_and_scale
from ..active_learning import Evaluations, censor_failures
from ..bounded import Bounds
from ._context import ProposalContext
from ._state import BOAskInfo, BOState
from ._surrogate import fit_surrogate

if TYPE_CHECKING:
    from ._learner import BO


def standardisation(evaluations: Evaluations) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Mean and (population) sd of the successful values (sd 1 when fewer than 2 or all equal)."""
    return location_and_scale(evaluations.values, evaluations.succeeded)


def standardised_bounds(learner: "BO", state: BOState, location, scale) -> Bounds | None:
    """The bounds in standardised units; a missing η takes the learner's default, the
    η₊² = 0.02 d, η₋² = 0.5 d of Nguyen et al. 2021, Sec. 5."""
    if state.f_plus is None and state.f_minus is None:
        return None
    dtype = state.evaluations.values.dtype

    def eta(given, squared_per_dimension):
        if given is None:
            return jnp.asarray(math.sqrt(squared_per_dimension * state.dimension), dtype)
        return given / scale

    def shift(bound):
        return None if bound is None else (bound - location) / scale

    return Bounds(
        shift(state.f_plus),
        shift(state.f_minus),
        None if state.f_plus is None else eta(state.eta_plus, learner.eta_plus_squared_per_dimension),
        None if state.f_minus is None else eta(state.eta_minus, learner.eta_minus_squared_per_dimension),
    )


def proposal_context(learner: "BO", state: BOState) -> tuple[ProposalContext, Int[Array, ""]]:
    """The `ProposalContext` of the learner's acquisition (with the surrogate refitted by
    ML-II to the standardised values, unless the acquisition uses none) and the number of
    values that the square-root GP clamped at its offset. The standardisation is that of the
    successful values; each failed evaluation at a finite input is fitted at the lowest of them,
    ỹ = min_n (y_n − location)/scale (`active_learning.censor_failures`)."""
    evaluations = state.evaluations
    search = dict(
        num_candidates=learner.num_candidates,
        num_starts=learner.num_starts,
        search_steps=learner.search_steps,
        extrema_steps=learner.extrema_steps,
    )
    inputs, succeeded = evaluations.inputs, evaluations.succeeded
    if not learner.acquisition.uses_surrogate:
        best = jnp.asarray(jnp.nan, inputs.dtype)
        return ProposalContext(inputs, succeeded, None, None, best, **search), jnp.zeros((), jnp.int32)
    location, scale = standardisation(evaluations)
    y, fitted = censor_failures((evaluations.values - location) / scale, succeeded, evaluations.censored)
    y = jnp.where(fitted, y, 0.0)
    bounds = standardised_bounds(learner, state, location, scale)
    offset, centre = learner.acquisition.surrogate_offset(bounds)
    surrogate = fit_surrogate(inputs, y, fitted, offset, learner.fit_steps, centre)
    best = jnp.max(jnp.where(succeeded, y, -jnp.inf))
    num_clamped = jnp.asarray(getattr(surrogate.posterior, "num_clamped", 0), jnp.int32)
    return ProposalContext(inputs, succeeded, surrogate, bounds, best, **search), num_clamped


def propose(learner: "BO", state: BOState, key: PRNGKeyArray) -> tuple[Float[Array, " D"], BOAskInfo]:
    """The acquisition's next point in the unit cube, and its diagnostics."""
    _, sample_key, search_key = jax.random.split(key, 3)
    context, num_clamped = proposal_context(learner, state)
    proposal = learner.acquisition.propose(context, sample_key, search_key)
    info = BOAskInfo(jnp.zeros((), bool), proposal.value, proposal.num_accepted, proposal.fell_back, num_clamped)
    return proposal.x, info
