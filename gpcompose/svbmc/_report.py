"""Which round an SVBMC run reports: the last one, or, when its ELBO is still uncertain, the
round of the last quarter with the highest lower confidence bound (VBMC's `best_vbmc`)."""

import math
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ..mixtures import VBMCMixture

if TYPE_CHECKING:
    from ._workflow import SVBMC


class RoundHistory(eqx.Module):
    """The mixtures, ELBOs, BQ sds and evaluation counts of the last H rounds, in a ring
    buffer: round r (0 is `init`'s fit, r ≥ 1 the r-th retraining) sits in slot r mod H.
    H = ⌈f·R⌉ + 1 with R = ⌈N_f / n_active⌉ the rounds of a whole run (N_f the budget's
    buffer rows, `active_learning.buffer_rows`; n_active `batch_size`) and
    f = `report_window_fraction`, so the reporting window of `reported_slot` always fits."""

    mixtures: VBMCMixture  # every leaf stacked along a leading axis of length H
    elbos: Float[Array, " H"]
    elbo_sds: Float[Array, " H"]
    evaluations: Int[Array, " H"]  # active-phase evaluations when the round was fitted
    rounds: Int[Array, " H"]  # the round held in each slot, −1 while empty
    num_rounds: Int[Array, ""]  # rounds recorded so far

    @property
    def capacity(self) -> int:
        """H, the number of slots."""
        return self.elbos.shape[0]


def history_capacity(options: "SVBMC", budget: int) -> int:
    """H = ⌈f·R⌉ + 1, R = ⌈N_f / n_active⌉ retrainings in a whole run of `budget` = N_f
    evaluations."""
    num_rounds = math.ceil(budget / options.batch_size)
    return math.ceil(options.report_window_fraction * num_rounds) + 1


def start_history(mixture: VBMCMixture, elbo, elbo_sd, options: "SVBMC", budget: int) -> RoundHistory:
    """A history holding `init`'s fit as round 0, for a run of `budget` evaluations."""
    capacity = history_capacity(options, budget)
    empty = RoundHistory(
        mixtures=jax.tree_util.tree_map(lambda leaf: jnp.stack([leaf] * capacity), mixture),
        elbos=jnp.zeros((capacity,), jnp.result_type(elbo)),
        elbo_sds=jnp.zeros((capacity,), jnp.result_type(elbo_sd)),
        evaluations=jnp.zeros((capacity,), jnp.int32),
        rounds=jnp.full((capacity,), -1, jnp.int32),
        num_rounds=jnp.zeros((), jnp.int32),
    )
    return record_round(empty, mixture, elbo, elbo_sd, jnp.zeros((), jnp.int32))


def record_round(history: RoundHistory, mixture: VBMCMixture, elbo, elbo_sd, num_evaluations) -> RoundHistory:
    """The history with the next round (its mixture, ELBO, BQ sd and evaluation count) in
    slot `num_rounds` mod H."""
    slot = history.num_rounds % history.capacity
    return RoundHistory(
        mixtures=jax.tree_util.tree_map(lambda stack, leaf: stack.at[slot].set(leaf), history.mixtures, mixture),
        elbos=history.elbos.at[slot].set(elbo),
        elbo_sds=history.elbo_sds.at[slot].set(elbo_sd),
        evaluations=history.evaluations.at[slot].set(num_evaluations),
        rounds=history.rounds.at[slot].set(history.num_rounds),
        num_rounds=history.num_rounds + 1,
    )


def resize_history(history: RoundHistory, capacity: int) -> RoundHistory:
    """The same rounds in a ring of `capacity` slots (round r in slot r mod `capacity`); when
    it is smaller, only the newest `capacity` rounds are kept."""
    keep = (history.rounds >= 0) & (history.rounds > history.num_rounds - 1 - capacity)
    slots = jnp.where(keep, history.rounds % capacity, capacity)  # `capacity`: out of range, dropped

    def move(stack, empty):
        filled = jnp.broadcast_to(empty, (capacity,) + stack.shape[1:]).astype(stack.dtype)
        return filled.at[slots].set(stack, mode="drop")

    return RoundHistory(
        mixtures=jax.tree_util.tree_map(lambda stack: move(stack, stack[0]), history.mixtures),
        elbos=move(history.elbos, 0.0),
        elbo_sds=move(history.elbo_sds, 0.0),
        evaluations=move(history.evaluations, 0),
        rounds=move(history.rounds, -1),
        num_rounds=history.num_rounds,
    )


def reported_slot(history: RoundHistory, options: "SVBMC") -> Int[Array, ""]:
    """The slot of the round to report. The last round r if its BQ sd is at most
    `options.report_sd_tolerance` (or that option is None); otherwise, of the rounds
    r − ⌈f·r⌉ … r (f = `options.report_window_fraction`), the one with the highest
    ELBO − s·sd (s = `options.report_safe_sd`), a lower confidence bound on log Z.

    This is VBMC's final choice (Acerbi 2018, `best_vbmc`: SafeSD = 5, FracBack = 0.25), whose
    test of the last iteration's stability is reduced here to its ELBO-sd part (VBMC's TolSD =
    0.1) [ours; Li et al. 2023 report the last round]. The run itself goes on from its last
    round either way. A last round can keep a mixture on a broad overestimate of the surrogate,
    which its large BQ sd shows; an earlier round with a settled ELBO is then the better report."""
    last_round = history.num_rounds - 1
    last = last_round % history.capacity
    if options.report_sd_tolerance is None:
        return last
    window = jnp.ceil(options.report_window_fraction * last_round.astype(history.elbos.dtype))
    oldest = last_round - window.astype(last_round.dtype)
    in_window = (history.rounds >= oldest) & (history.rounds >= 0)
    bound = history.elbos - options.report_safe_sd * history.elbo_sds
    bound = jnp.where(in_window & jnp.isfinite(bound), bound, -jnp.inf)
    best = jnp.argmax(bound).astype(last.dtype)
    settled = history.elbo_sds[last] <= options.report_sd_tolerance
    return jnp.where(settled | ~jnp.isfinite(bound[best]), last, best)
